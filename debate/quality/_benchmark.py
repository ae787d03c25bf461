"""``debate calibrate``: run the panel on items with a known answer and record track records."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field, field_validator

from debate.api import judge_transcript
from debate.council._review import check_candidates
from debate.council._run import run_council
from debate.exceptions import ConfigurationError
from debate.models._base import Model
from debate.panel._decision import score_matrices
from debate.panel._identity import identity
from debate.quality._track import (
    DimensionAgreement,
    ScoreRow,
    TrackRecords,
    dimension_agreement,
)
from debate.quality._validity import (
    CalibrationReport,
    Label,
    PairwiseItem,
    candidates_of,
    check_dimensions,
    judge_row,
    nominal_alpha,
    panel_call,
    review_call,
)
from debate.records._config import RunConfig
from debate.records._result import DebateResult
from debate.records._transcript import DIMENSIONS, Frozen, Transcript
from debate.runtime._pool import CacheSpec, ModelPool
from debate.runtime._prompts import PromptRenderer
from debate.stats import calibrate as calibrate_scores
from debate.storage._files import read_jsonl_records


class DebateItem(Frozen):
    """A debate transcript with a known verdict."""

    id: str
    transcript: Transcript
    verdict: Literal["PRO", "CON", "TIE"]
    """Checked when the file is read, so a typo fails before any judge is called."""
    people_scores: dict[str, dict[str, float]] = Field(default_factory=dict)
    """People's mean score per argument id and rubric dimension, where they gave scores."""

    @field_validator("people_scores")
    @classmethod
    def _rubric_dimensions(cls, value: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        return check_dimensions(value, DIMENSIONS)


JudgeKey = Callable[[str, str], str]
"""(judge name, model name) -> track-record identity."""


def judge_key(config: RunConfig) -> JudgeKey:
    """Track-record identities of the config's judges, with the config's templates."""
    roles = {j.name: j.role for j in config.judges}
    renderer = PromptRenderer(config.templates)
    return lambda name, model: identity(roles[name], model, renderer)


ScoreEntry = tuple[str, Mapping[str, Mapping[str, float]], str, str, Mapping[str, BaseModel]]
"""``(item id, people's scores, judge name, model name, the judge's scores by target)``."""


def record_scores(
    records: TrackRecords, dataset: str, key_of: JudgeKey, entries: Iterable[ScoreEntry]
) -> dict[str, dict[str, DimensionAgreement]]:
    """Store judges' dimension scores beside people's; this run's agreement per judge name."""
    named: list[tuple[str, ScoreRow]] = [
        (name, (key_of(name, model), item, dataset, target, dim, judge, value))
        for item, people_scores, name, model, scores in entries
        for target, people in people_scores.items()
        if target in scores
        for dim, value in people.items()
        for judge in [float(getattr(scores[target], dim))]
    ]
    records.add_scores(row for _, row in named)
    by_name: dict[str, list[tuple[str, float, float]]] = {}
    for name, (_, _, _, _, dimension, judge, people) in named:
        by_name.setdefault(name, []).append((dimension, judge, people))
    return {name: dimension_agreement(triples) for name, triples in by_name.items()}


def read_debate_items(path: str | Path, limit: int | None = None) -> list[DebateItem]:
    """JSONL of ``{"id", "transcript", "verdict"}``."""
    items = [item for _, item in read_jsonl_records(path, "debate items", DebateItem)]
    return items[:limit] if limit is not None else items


def judge_debate_call(result: DebateResult, judge: str) -> str | None:
    """A judge's own verdict: the sign of its own per-side mean (TIE within the gap)."""
    evaluation = next(e for e in result.evaluations if e.judge == judge)
    if evaluation.status != "scored":
        return None
    weights = {j.name: j.weights for j in result.config.judges}
    raw = score_matrices(result.transcript, [evaluation], weights).raw
    calibrated = calibrate_scores(raw, result.vote.calibration)[0]
    is_pro = np.array([s == "PRO" for s in result.transcript.sides])
    margin = float(calibrated[is_pro].mean() - calibrated[~is_pro].mean())
    if abs(margin) < result.config.thresholds.gap:
        return "TIE"
    return "PRO" if margin > 0 else "CON"


def panel_debate_call(result: DebateResult) -> str | None:
    """The panel's verdict; None (a split) when it has none."""
    d = result.decision
    if d.outcome == "winner":
        return d.winner
    return "TIE" if d.outcome == "too_close" else None


async def calibrate_debates(
    items: Sequence[DebateItem],
    *,
    config: RunConfig,
    records: TrackRecords,
    model: Model | None = None,
    judges: Mapping[str, Model] | None = None,
    seed: int = 0,
    concurrency: int = 4,
    cache: CacheSpec = None,
) -> CalibrationReport:
    """Judge every transcript; compare each judge's call with the known verdict."""
    gate = asyncio.Semaphore(concurrency)
    pool = ModelPool(config, seed=seed)

    async def one(item: DebateItem) -> DebateResult:
        async with gate:
            return await judge_transcript(
                item.transcript,
                config=config,
                model=model,
                judges=judges,
                seed=seed,
                pool=pool,
                cache=cache,
            )

    try:
        results = await asyncio.gather(*(one(i) for i in items))
    finally:
        await pool.aclose()
    names = [j.name for j in config.judges]
    key_of = judge_key(config)
    calls = {n: [judge_debate_call(r, n) for r in results] for n in names}
    rows: list[tuple[str, str, str, str, str]] = []
    for n in names:
        for item, result, call in zip(items, results, calls[n], strict=True):
            if call is not None:
                model_name = next(e.model for e in result.evaluations if e.judge == n)
                rows.append((key_of(n, model_name), item.id, "debate", call, item.verdict))
    records.add(rows)
    dimensions = record_scores(
        records,
        "debate",
        key_of,
        (
            (item.id, item.people_scores, e.judge, e.model, e.scores)
            for item, result in zip(items, results, strict=True)
            for e in result.evaluations
            if e.scores is not None
        ),
    )
    pseudo = [_as_pairwise(i) for i in items]
    as_label = {"PRO": "a", "CON": "b", "TIE": "tie"}
    report_rows = [
        judge_row(n, [as_label.get(c) if c else None for c in calls[n]], pseudo)  # type: ignore[misc]
        for n in names
    ]
    panel_calls = [panel_debate_call(r) for r in results]
    report_rows.append(
        judge_row("panel", [as_label.get(c) if c else None for c in panel_calls], pseudo)  # type: ignore[misc]
    )
    history = records.all_accuracies()
    accuracy = {}
    if results:
        for n in names:
            model_name = next(e.model for e in results[0].evaluations if e.judge == n)
            accuracy[n] = history.get(key_of(n, model_name), 1.0)
    return CalibrationReport(
        dataset="debate",
        items=len(items),
        rows=report_rows,
        alpha_judges=nominal_alpha([calls[n] for n in names]),
        alpha_people=None,
        accuracy_after=accuracy,
        dimensions=dimensions,
    )


def _as_pairwise(item: DebateItem) -> PairwiseItem:
    label: Label = {"PRO": "a", "CON": "b", "TIE": "tie"}[item.verdict]  # type: ignore[assignment]
    return PairwiseItem(id=item.id, question="-", a="-", b="-", labels=[label])


async def calibrate_pairwise(
    items: Sequence[PairwiseItem],
    *,
    dataset: str,
    config: RunConfig,
    records: TrackRecords,
    model: Model | None = None,
    seed: int = 0,
    concurrency: int = 4,
    cache: CacheSpec = None,
) -> CalibrationReport:
    """Rank each pair with the council; compare each reviewer's call with the majority.

    Every item is checked before the first call, so a bad item fails the run at once, by
    its id, rather than after an hour of completed calls.
    """
    for item in items:
        try:
            check_candidates(item.question, candidates_of(item))
        except ConfigurationError as exc:
            raise ConfigurationError(f"item {item.id}: {exc}") from exc
    gate = asyncio.Semaphore(concurrency)
    pool = ModelPool(config, seed=seed)
    shared = model or pool.get(None)

    async def one(item: PairwiseItem) -> Any:
        async with gate:
            return await run_council(
                item.question,
                candidates_of(item),
                model=shared,
                config=config,
                seed=seed,
                cache=cache,
                pool=pool,
            )

    try:
        results = await asyncio.gather(*(one(i) for i in items))
    finally:
        await pool.aclose()
    names = [j.name for j in config.judges]
    key_of = judge_key(config)
    calls: dict[str, list[Any]] = {n: [] for n in names}
    rows: list[tuple[str, str, str, str, str]] = []
    for item, result in zip(items, results, strict=True):
        for review in result.reviews:
            call = review_call(review)
            calls[review.reviewer].append(call)
            if call is not None and item.majority is not None:
                rows.append(
                    (
                        key_of(review.reviewer, review.model),
                        item.id,
                        dataset,
                        call,
                        item.majority,
                    )
                )
    records.add(rows)
    dimensions = record_scores(
        records,
        dataset,
        key_of,
        (
            (item.id, item.people_scores, review.reviewer, review.model, review.scores)
            for item, result in zip(items, results, strict=True)
            for review in result.reviews
            if review.scores is not None
        ),
    )
    report_rows = [judge_row(n, calls[n], items) for n in names]
    report_rows.append(judge_row("panel", [panel_call(r) for r in results], items))
    for baseline in sorted({k for i in items for k in i.baselines}):
        report_rows.append(
            judge_row(f"{baseline} (published)", [i.baselines.get(baseline) for i in items], items)
        )
    people_rows = max(len(i.labels) for i in items) if items else 0
    people = [
        [i.labels[k] if k < len(i.labels) else None for i in items] for k in range(people_rows)
    ]
    history = records.all_accuracies()
    model_name = shared.name
    return CalibrationReport(
        dataset=dataset,
        items=len(items),
        rows=report_rows,
        alpha_judges=nominal_alpha([calls[n] for n in names]),
        alpha_people=nominal_alpha(people),
        accuracy_after={n: history.get(key_of(n, model_name), 1.0) for n in names},
        dimensions=dimensions,
    )
