"""``debate calibrate``: run the panel on items with a known answer and record track records."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Literal, NamedTuple, TypeVar

import numpy as np
from pydantic import BaseModel, Field, field_validator

from debate.api import judge_transcript
from debate.council import check_candidates, run_council
from debate.exceptions import ConfigurationError
from debate.judgments import (
    DimensionAgreement,
    ScoreRow,
    TrackRecords,
    call_error_correlation,
    dimension_agreement,
    write_judgments,
)
from debate.models import Model
from debate.panel import ask_every_tier, identity, score_matrices
from debate.quality._validity import (
    CalibrationReport,
    JudgeValidity,
    Label,
    PairwiseItem,
    candidates_of,
    check_dimensions,
    judge_row,
    nominal_alpha,
    panel_call,
    review_call,
)
from debate.records import (
    COUNCIL_DIMENSIONS,
    DIMENSIONS,
    CouncilResult,
    DebateResult,
    Frozen,
    RunConfig,
    Scale,
    Transcript,
)
from debate.runtime import PromptRenderer, Run, owned_pool, total_usage
from debate.stats import calibrate as calibrate_scores
from debate.storage import read_jsonl_records


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


Reading = tuple[str, str, Mapping[str, BaseModel] | None]
"""``(judge name, model name, its scores by target)``: None where it gave none."""


def _score_entries(
    items: Sequence[DebateItem | PairwiseItem], readings: Iterable[Sequence[Reading]]
) -> Iterator[ScoreEntry]:
    """Every judge's scores of each item beside people's, the item's readings in order."""
    for item, read in zip(items, readings, strict=True):
        for name, model, scores in read:
            if scores is not None:
                yield (item.id, item.people_scores, name, model, scores)


def read_debate_items(path: str | Path, limit: int | None = None) -> list[DebateItem]:
    """JSONL of ``{"id", "transcript", "verdict"}``."""
    items = [item for _, item in read_jsonl_records(path, "debate file", DebateItem)]
    return items[:limit] if limit is not None else items


def judge_debate_call(result: DebateResult, judge: str) -> str | None:
    """A judge's own verdict: the sign of its own per-side mean (TIE within the gap).

    None when it did not score, or was not asked: a standby is asked only in the place of
    a judge that ended unscored, so on most debates it has no evaluation at all.
    """
    evaluation = next((e for e in result.evaluations if e.judge == judge), None)
    if evaluation is None or evaluation.status != "scored":
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


Item = TypeVar("Item")
R = TypeVar("R")

Call = tuple[str, str, str, str | None, str | None]
"""``(judge name, model name, item id, the judge's call, the known answer)``."""


async def _run_items(
    items: Sequence[Item],
    work: Callable[[Item, Run], Awaitable[R]],
    concurrency: int,
    run: Run,
    config: RunConfig,
    seed: int,
) -> list[R]:
    """Run every item, at most ``concurrency`` at a time, all in one pool.

    The pool is ``run``'s, or one built here for ``config`` and closed at the end.
    """
    gate = asyncio.Semaphore(concurrency)
    async with owned_pool(run.pool, config, seed=seed, model_path=run.model_path) as pool:
        shared = run.with_(pool=pool)

        async def one(item: Item) -> R:
            async with gate:
                return await work(item, shared)

        return list(await asyncio.gather(*(one(i) for i in items)))


def _record(
    records: TrackRecords,
    dataset: str,
    key_of: JudgeKey,
    calls: Iterable[Call],
    scores: Iterable[ScoreEntry],
) -> dict[str, dict[str, DimensionAgreement]]:
    """Store every call that has a known answer, and every score people also gave."""
    records.add(
        [
            (key_of(name, model), item, dataset, call, truth)
            for name, model, item, call, truth in calls
            if call is not None and truth is not None
        ]
    )
    return record_scores(records, dataset, key_of, scores)


def _accuracy_after(
    records: TrackRecords, key_of: JudgeKey, models: Mapping[str, str]
) -> dict[str, float]:
    """Each judge's shrunk accuracy once this run is stored (1.0 without history)."""
    history = records.all_accuracies()
    return {name: history.get(key_of(name, model), 1.0) for name, model in models.items()}


Rows = Iterable[Mapping[str, object]]
"""Rows of a tidy table (``judgments.csv`` or ``labels.csv``)."""
Result = TypeVar("Result", DebateResult, CouncilResult)


class _Tally(NamedTuple):
    """What one kind of item's results give the report :func:`_calibrate` builds."""

    calls: Mapping[str, Sequence[str | None]]
    """Each judge's own call per item, in the item's own terms (alpha among the judges)."""
    labels: Mapping[str, Sequence[str | None]]
    """The same calls as pairwise labels, for their error correlation against ``truth``."""
    truth: Sequence[str | None]
    recorded: Iterable[Call]
    scores: Iterable[ScoreEntry]
    rows: list[JudgeValidity]
    alpha_people: float | None
    models: Mapping[str, str]
    """Each judge's model, naming its track record in ``accuracy_after``."""


@dataclass(frozen=True)
class _Kind(Generic[Item, Result]):
    """How one kind of item is judged and read: all the two calibrations differ in."""

    dataset: str
    work: Callable[[Item, Run], Awaitable[Result]]
    tidy: Callable[[Sequence[Item], Sequence[Result]], tuple[Rows, Rows]]
    """The judges' scores and the known answers, for ``judgments.csv`` and ``labels.csv``."""
    tally: Callable[[Sequence[Item], Sequence[Result], Sequence[str]], _Tally]


async def _calibrate(
    kind: _Kind[Item, Result],
    items: Sequence[Item],
    config: RunConfig,
    records: TrackRecords,
    seed: int,
    concurrency: int,
    run: Run | None,
    judgments: Path | None,
) -> CalibrationReport:
    """Judge every item, store the track records, and report against the known answers.

    One piece for debates and pairs, so both store and report a run the same way.
    """
    run = run or Run()
    results = await _run_items(items, kind.work, concurrency, run, config, seed)
    if judgments is not None:
        _write_tidy(judgments, *kind.tidy(items, results))
    names = [j.name for j in config.judges]
    key_of = judge_key(config)
    tally = kind.tally(items, results, names)
    dimensions = _record(records, kind.dataset, key_of, tally.recorded, tally.scores)
    return CalibrationReport(
        dataset=kind.dataset,
        items=len(items),
        rows=tally.rows,
        alpha_judges=nominal_alpha([tally.calls[n] for n in names]),
        judge_correlation=call_error_correlation(tally.labels, tally.truth),
        alpha_people=tally.alpha_people,
        accuracy_after=_accuracy_after(records, key_of, tally.models),
        dimensions=dimensions,
        usage=total_usage([r.usage for r in results], run.prices, run.budget),
    )


async def calibrate_debates(
    items: Sequence[DebateItem],
    *,
    config: RunConfig,
    records: TrackRecords,
    model: Model | None = None,
    judges: Mapping[str, Model] | None = None,
    seed: int = 0,
    concurrency: int = 4,
    run: Run | None = None,
    judgments: Path | None = None,
) -> CalibrationReport:
    """Judge every transcript; compare each judge's call with the known verdict.

    ``run`` is shared by every item: one limiter, one budget (one cap over the
    calibration), one cache, and its event handler hears every call of every item; without
    a pool of its own, the config's models are built here as a run would build them (the
    endpoints and their keys come from ``config``) and closed at the end. With
    ``judgments`` (a folder), every judge's scores and the known verdicts are also written
    there as ``judgments.csv`` and ``labels.csv``, so the run can be validated later.
    """

    async def judge(item: DebateItem, shared: Run) -> DebateResult:
        return await judge_transcript(
            item.transcript,
            config=config,
            model=model,
            judges=judges,
            seed=seed,
            run=shared,
            escalation=ask_every_tier,  # a track record needs every judge on every item
        )

    kind = _Kind("debate", judge, _debate_tidy, _debate_tally)
    return await _calibrate(kind, items, config, records, seed, concurrency, run, judgments)


def _debate_tidy(items: Sequence[DebateItem], results: Sequence[DebateResult]) -> tuple[Rows, Rows]:
    """Every judge's rubric scores, and each known verdict as person_1's."""
    labels = ({"item": i.id, "judge": "person_1", "verdict": VERDICT_OF[i.verdict]} for i in items)
    return debate_judgment_rows(items, results), labels


def _debate_tally(
    items: Sequence[DebateItem], results: Sequence[DebateResult], names: Sequence[str]
) -> _Tally:
    """Each judge's and the panel's verdicts against the known ones (as pairwise labels)."""
    calls = {n: [judge_debate_call(r, n) for r in results] for n in names}
    models = [{e.judge: e.model for e in r.evaluations} for r in results]
    pseudo = [_as_pairwise(i) for i in items]
    rows = [judge_row(n, _labels(calls[n]), pseudo) for n in names]
    rows.append(judge_row("panel", _labels([panel_debate_call(r) for r in results]), pseudo))
    return _Tally(
        calls=calls,
        labels={n: _labels(calls[n]) for n in names},
        truth=[p.majority for p in pseudo],
        recorded=(
            (n, used[n], item.id, call, item.verdict)
            for n in names
            for item, used, call in zip(items, models, calls[n], strict=True)
            if n in used  # a standby not asked on this item has nothing to record
        ),
        scores=_score_entries(
            items, ([(e.judge, e.model, e.scores) for e in r.evaluations] for r in results)
        ),
        rows=rows,
        alpha_people=None,
        models=models[0] if results else {},
    )


def _labels(verdicts: Sequence[str | None]) -> list[Label | None]:
    """A judge's debate verdicts (PRO, CON, TIE) as pairwise labels (a, b, tie)."""
    as_label: dict[str, Label] = {"PRO": "a", "CON": "b", "TIE": "tie"}
    return [as_label[v] if v else None for v in verdicts]


def _as_pairwise(item: DebateItem) -> PairwiseItem:
    label: Label = {"PRO": "a", "CON": "b", "TIE": "tie"}[item.verdict]  # type: ignore[assignment]
    return PairwiseItem(id=item.id, question="-", a="-", b="-", labels=[label])


def _review_calls(
    names: Sequence[str], results: Sequence[CouncilResult]
) -> dict[str, list[Label | None]]:
    """Each reviewer's call on every item, in item order."""
    calls: dict[str, list[Label | None]] = {n: [] for n in names}
    for result in results:
        for review in result.reviews:
            calls[review.reviewer].append(review_call(review))
    return calls


def _reviewer_models(results: Sequence[CouncilResult]) -> dict[str, str]:
    """Each reviewer's own model, as its reviews recorded it.

    A judge with a model of its own has a track record of its own, not the shared model's.
    """
    return {r.reviewer: r.model for result in results[:1] for r in result.reviews}


def _check_pairs(items: Sequence[PairwiseItem]) -> None:
    """Every item is checked before the first call, so a bad one fails at once, by its id."""
    for item in items:
        try:
            check_candidates(item.question, candidates_of(item))
        except ConfigurationError as exc:
            raise ConfigurationError(f"item {item.id}: {exc}") from exc


async def calibrate_pairwise(
    items: Sequence[PairwiseItem],
    *,
    dataset: str,
    config: RunConfig,
    records: TrackRecords,
    model: Model | None = None,
    seed: int = 0,
    concurrency: int = 4,
    run: Run | None = None,
    judgments: Path | None = None,
) -> CalibrationReport:
    """Rank each pair with the council; compare each reviewer's call with the majority.

    Takes ``run`` and ``judgments`` as :func:`calibrate_debates` does.
    """
    _check_pairs(items)

    async def rank(item: PairwiseItem, shared: Run) -> CouncilResult:
        assert shared.pool is not None  # the calibration's pool (:func:`_run_items`)
        return await run_council(
            item.question,
            candidates_of(item),
            model=model or shared.pool.get(None),
            config=config,
            seed=seed,
            run=shared,
            escalation=ask_every_tier,  # every reviewer on every pair, as for debates
        )

    kind = _Kind(dataset, rank, _pairwise_tidy, _pairwise_tally)
    return await _calibrate(kind, items, config, records, seed, concurrency, run, judgments)


def _pairwise_tidy(
    items: Sequence[PairwiseItem], results: Sequence[CouncilResult]
) -> tuple[Rows, Rows]:
    """Every reviewer's rubric scores, and every person's label."""
    return pairwise_judgment_rows(items, results), pairwise_label_rows(items)


def _pairwise_tally(
    items: Sequence[PairwiseItem], results: Sequence[CouncilResult], names: Sequence[str]
) -> _Tally:
    """Each reviewer's, the council's and every published judge's calls against people."""
    calls = _review_calls(names, results)
    rows = [judge_row(n, list(calls[n]), items) for n in names]
    rows.append(judge_row("panel", [panel_call(r) for r in results], items))
    for baseline in sorted({k for i in items for k in i.baselines}):
        published = [i.baselines.get(baseline) for i in items]
        rows.append(judge_row(f"{baseline} (published)", published, items))
    people = [
        [i.labels[k] if k < len(i.labels) else None for i in items]
        for k in range(max((len(i.labels) for i in items), default=0))
    ]
    return _Tally(
        calls=calls,
        labels={n: list(calls[n]) for n in names},
        truth=[i.majority for i in items],
        recorded=(
            (review.reviewer, review.model, item.id, review_call(review), item.majority)
            for item, result in zip(items, results, strict=True)
            for review in result.reviews
        ),
        scores=_score_entries(
            items, ([(v.reviewer, v.model, v.scores) for v in r.reviews] for r in results)
        ),
        rows=rows,
        alpha_people=nominal_alpha(people),
        models=_reviewer_models(results),
    )


SCORE_COLUMNS = ("item", "option", "unit", "judge", "dimension", "score", "order", "standing")
LABEL_COLUMNS = ("item", "judge", "verdict")
VERDICT_OF: dict[str, str] = {
    "PRO": "A",
    "CON": "B",
    "TIE": "tie",
    "a": "A",
    "b": "B",
    "tie": "tie",
}
"""A known answer as a verdict row: the first option (PRO, candidate a) is A."""
RUBRIC_SCALE = Scale(low=1, high=10)


def _write_tidy(
    folder: Path, scores: Iterable[Mapping[str, object]], labels: Iterable[Mapping[str, object]]
) -> None:
    """``judgments.csv`` and ``labels.csv``: the tidy tables ``debate validity`` reads."""
    write_judgments(folder / "judgments.csv", scores, scale=RUBRIC_SCALE, columns=SCORE_COLUMNS)
    write_judgments(folder / "labels.csv", labels, scale=None, columns=LABEL_COLUMNS)


def debate_judgment_rows(
    items: Sequence[DebateItem], results: Sequence[DebateResult]
) -> Iterator[dict[str, object]]:
    """Every scored judge's rubric scores: option = side, unit = argument id.

    A judge that also read the sides swapped (the swap check) gives both readings, the
    first as ``order`` AB and the swapped one as BA; an unscored reading gives no rows
    (nothing is filled in for it).
    """
    for item, result in zip(items, results, strict=True):
        side_of = {a.id: a.side for a in result.transcript.arguments}
        for e in result.evaluations:
            readings = [("", e.scores)]
            if e.swap is not None:
                readings = [("AB", e.scores), ("BA", e.swap.scores)]
            for order, scores in readings:
                for unit, score in (scores or {}).items():
                    yield from (
                        {
                            "item": item.id,
                            "option": side_of[unit],
                            "unit": unit,
                            "judge": e.judge,
                            "dimension": dimension,
                            "score": score.dimension(dimension),
                            "order": order,
                            "standing": score.standing,
                        }
                        for dimension in DIMENSIONS
                    )


def pairwise_judgment_rows(
    items: Sequence[PairwiseItem], results: Sequence[CouncilResult]
) -> Iterator[dict[str, object]]:
    """Every scored reviewer's rubric scores of candidates a and b.

    ``order`` is the order the reviewer was shown them: AB when a came first, BA if not.
    """
    for item, result in zip(items, results, strict=True):
        for review in result.reviews:
            if review.scores is None:
                continue
            order = "AB" if review.positions.get("a", 0) <= review.positions.get("b", 1) else "BA"
            for option, score in sorted(review.scores.items()):  # a before b, as listed
                if option in review.self_votes_excluded:
                    continue
                for dimension in COUNCIL_DIMENSIONS:
                    yield {
                        "item": item.id,
                        "option": option,
                        "judge": review.reviewer,
                        "dimension": dimension,
                        "score": getattr(score, dimension),
                        "order": order,
                    }


def pairwise_label_rows(items: Sequence[PairwiseItem]) -> Iterator[dict[str, object]]:
    """People's labels as verdict rows, judges ``person_1..n`` (A: candidate a is better)."""
    for item in items:
        for k, label in enumerate(item.labels, start=1):
            yield {"item": item.id, "judge": f"person_{k}", "verdict": VERDICT_OF[label]}
