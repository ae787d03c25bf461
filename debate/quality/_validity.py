"""Judges against people: items with a known answer, track records, and a validity report.

Items are pairwise (a question and two candidates, with people's labels ``a``/``b``/``tie``)
or debates with a known verdict (``PRO``/``CON``/``TIE``). Each judge's own call is compared
with the people's majority; the calls update the judges' track records; the report gives
per judge and for the panel: accuracy against the majority with a Wilson interval, Cohen's
kappa against the majority, how often it says "tie" when people split vs when they agree,
and Krippendorff's alpha among the judges beside alpha among the people on the same items.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from debate.exceptions import ConfigurationError
from debate.judgments import DimensionAgreement
from debate.quality._audit import Estimate, wilson
from debate.records import (
    COUNCIL_DIMENSIONS,
    Candidate,
    CouncilResult,
    Frozen,
    JudgeCorrelation,
    Review,
    Usage,
)
from debate.stats import krippendorff_alpha
from debate.storage import read_jsonl, read_jsonl_records

Label = Literal["a", "b", "tie"]


class PairwiseItem(Frozen):
    """A question, two candidates, and what people said."""

    id: str
    question: str
    a: str
    b: str
    labels: list[Label] = Field(min_length=1)
    baselines: dict[str, Label | None] = Field(default_factory=dict)
    """Published judge outputs on the same item (e.g. GPT-3.5 for PandaLM)."""
    people_scores: dict[str, dict[str, float]] = Field(default_factory=dict)
    """People's mean score per candidate and council dimension, where they gave scores."""

    @field_validator("people_scores")
    @classmethod
    def _council_dimensions(cls, value: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        unknown = sorted(set(value) - {"a", "b"})
        if unknown:
            raise ValueError(f"people_scores: candidate {unknown[0]!r}; use 'a' or 'b'")
        return check_dimensions(value, COUNCIL_DIMENSIONS)

    @property
    def majority(self) -> Label | None:
        """The strict-majority label, or None when people have none."""
        (label, count), *_ = Counter(self.labels).most_common(1) + [("", 0)]
        return label if count * 2 > len(self.labels) else None  # type: ignore[return-value]

    @property
    def people_split(self) -> bool:
        """No majority, or at least two dissenters (of five)."""
        if self.majority is None:
            return True
        dissent = sum(1 for label in self.labels if label != self.majority)
        return dissent >= 2


def check_dimensions(
    value: dict[str, dict[str, float]], known: Sequence[str]
) -> dict[str, dict[str, float]]:
    """People's scores name only rubric dimensions the judges score."""
    for target, scores in value.items():
        unknown = sorted(set(scores) - set(known))
        if unknown:
            raise ValueError(
                f"people_scores[{target!r}]: unknown dimension {unknown[0]!r}; "
                f"use {', '.join(known)}"
            )
    return value


Row = dict[str, Any]
"""One record of a published dataset, as its JSON gives it."""


def read_ukpconvarg(path: str | Path, limit: int | None = None) -> list[PairwiseItem]:
    """UKPConvArg1 pairs: which of two arguments on one side is more convincing."""
    mapping: dict[str, Label] = {"a1": "a", "a2": "b", "equal": "tie"}

    def item_of(row: Row) -> PairwiseItem:
        question = (
            f"Debate: {row['debate_title']}. Side: {row['stance']}. "
            "Which argument is more convincing?"
        )
        labels = [mapping[str(a["label"])] for a in row["annotations"]]
        return _pair(question, (row["id"], row["arg1"], row["arg2"]), labels)

    return _first_items((row for _, row in read_jsonl(path, "ukpconvarg file")), limit, item_of)


def read_pandalm(path: str | Path, limit: int | None = None) -> list[PairwiseItem]:
    """PandaLM test set: two answers to an instruction, three annotators (1 | 2 | 0 tie).

    The published GPT-3.5 judge output is attached when the baseline file sits beside it
    (``baseline_judges/gpt-3.5-turbo-testset-v1.json``).
    """
    source = Path(path)
    mapping: dict[int, Label] = {1: "a", 2: "b", 0: "tie"}
    gpt: dict[int, Label | None] = {}
    baseline = source.parent / "baseline_judges" / "gpt-3.5-turbo-testset-v1.json"
    if baseline.exists():
        for row in json.loads(baseline.read_text(encoding="utf-8")):
            value = str(row["gpt_result"])
            gpt[int(row["idx"])] = {"1": "a", "2": "b", "Tie": "tie"}.get(value)  # type: ignore[assignment]

    def item_of(row: Row) -> PairwiseItem:
        question = str(row["instruction"]) + (f"\n\nInput: {row['input']}" if row["input"] else "")
        return _pair(
            question,
            (row["idx"], row["response1"], row["response2"]),
            [mapping[int(row[f"annotator{i}"])] for i in (1, 2, 3)],
            {"gpt-3.5-turbo": gpt.get(int(row["idx"]))} if gpt else {},
        )

    return _first_items(json.loads(source.read_text(encoding="utf-8")), limit, item_of)


def _pair(
    question: str,
    fields: tuple[object, object, object],
    labels: list[Label],
    baselines: dict[str, Label | None] | None = None,
) -> PairwiseItem:
    """A dataset's record as an item; ``fields``: its id and its two candidates' texts."""
    key, a, b = fields
    return PairwiseItem(
        id=str(key), question=question, a=str(a), b=str(b), labels=labels, baselines=baselines or {}
    )


def _first_items(
    rows: Iterable[Row], limit: int | None, item_of: Callable[[Row], PairwiseItem]
) -> list[PairwiseItem]:
    """The items of the first ``limit`` records (every one without a limit), read no further."""
    items = []
    for row in rows:
        items.append(item_of(row))
        if limit is not None and len(items) >= limit:
            break
    return items


def read_pairwise(path: str | Path, limit: int | None = None) -> list[PairwiseItem]:
    """Our own pairwise JSONL: one PairwiseItem per line."""
    items = [item for _, item in read_jsonl_records(path, "pairwise file", PairwiseItem)]
    return items[:limit] if limit is not None else items


READERS = {"ukpconvarg": read_ukpconvarg, "pandalm": read_pandalm, "pairwise": read_pairwise}


def load_items(path: str | Path, fmt: str, limit: int | None = None) -> list[PairwiseItem]:
    """Read items of a format; a clear error for an unknown format or unreadable file."""
    if fmt not in READERS:
        raise ConfigurationError(f"--format: {fmt!r}; choose from {', '.join(READERS)}")
    try:
        return READERS[fmt](path, limit)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigurationError(f"{fmt} file {path}: cannot read it ({exc})") from exc


EMPTY_ANSWER = "(this response is empty: the model gave no answer)"


def candidates_of(item: PairwiseItem) -> list[Candidate]:
    """The item's two candidates, ids ``a`` and ``b``.

    Datasets hold empty answers (PandaLM items 18, 19 and 25 have an empty response 1) and
    people labelled them; the judges are shown an explicit marker instead of nothing.
    """
    return [
        Candidate(id=key, text=text if text.strip() else EMPTY_ANSWER)
        for key, text in (("a", item.a), ("b", item.b))
    ]


def review_call(review: Review) -> Label | None:
    """A reviewer's own call on a pair: the higher overall score, or tie when equal."""
    if review.overall is None:
        return None
    a, b = review.overall["a"], review.overall["b"]
    return "tie" if a == b else "a" if a > b else "b"


def panel_call(result: CouncilResult) -> Label | None:
    """The council's call: tie when its top two are statistically tied."""
    if not result.rankings or result.agreement.reviewers_scored == 0:
        return None
    top = result.rankings[0]
    return "tie" if top.tied_with_next else top.candidate  # type: ignore[return-value]


def cohen_kappa(x: Sequence[str], y: Sequence[str]) -> float:
    """Cohen's kappa of two label sequences (nan where chance agreement is 1)."""
    n = len(x)
    if n == 0:
        return math.nan
    observed = sum(1 for a, b in zip(x, y, strict=True) if a == b) / n
    cx, cy = Counter(x), Counter(y)
    expected = sum(cx[k] * cy[k] for k in set(cx) | set(cy)) / (n * n)
    return math.nan if expected >= 1 else (observed - expected) / (1 - expected)


class JudgeValidity(Frozen):
    """One row of the validity report."""

    judge: str
    items: int
    """Items where people had a majority and this judge made a call."""
    accuracy: Estimate
    kappa: float | None
    tie_rate_when_people_split: float | None
    tie_rate_when_people_agree: float | None


def judge_row(name: str, calls: list[Label | None], items: Sequence[PairwiseItem]) -> JudgeValidity:
    """Accuracy, kappa and tie behaviour of one judge (or the panel, or a baseline)."""
    pairs = [
        (c, i.majority)
        for c, i in zip(calls, items, strict=True)
        if c is not None and i.majority is not None
    ]
    correct = sum(1 for c, m in pairs if c == m)
    kappa = cohen_kappa([c for c, _ in pairs], [m for _, m in pairs]) if pairs else math.nan

    def tie_rate(split: bool) -> float | None:
        chosen = [
            c
            for c, i in zip(calls, items, strict=True)
            if c is not None and i.people_split == split
        ]
        return None if not chosen else sum(c == "tie" for c in chosen) / len(chosen)

    return JudgeValidity(
        judge=name,
        items=len(pairs),
        accuracy=wilson(correct, len(pairs), minimum=1),
        kappa=None if math.isnan(kappa) else kappa,
        tie_rate_when_people_split=tie_rate(True),
        tie_rate_when_people_agree=tie_rate(False),
    )


def nominal_alpha(rows: Sequence[Sequence[str | None]]) -> float | None:
    """Nominal alpha over raters x items labels (None missing)."""
    if len(rows) < 2:
        return None
    value = krippendorff_alpha([list(r) for r in rows], "nominal")
    return None if math.isnan(value) else value


class CalibrationReport(Frozen):
    """Per judge and for the panel, against the people's (or the known) answer."""

    dataset: str
    items: int
    rows: list[JudgeValidity]
    alpha_judges: float | None
    alpha_people: float | None
    accuracy_after: dict[str, float]
    """Each judge's track-record accuracy (shrunk, see debate.judgments._track) after this run."""
    dimensions: dict[str, dict[str, DimensionAgreement]] = Field(default_factory=dict)
    """Per judge, per rubric dimension: agreement with people's scores on this run's items
    (only where the items carry people's scores)."""
    usage: Usage | None = None
    """Every item's model usage together, with its cost from the price table."""
    judge_correlation: JudgeCorrelation | None = None
    """The judges' error correlation against the people's (or the known) answer, and the
    effective independent votes it leaves (None with one judge)."""


def format_report(report: CalibrationReport, label: str) -> str:
    """The validity table as text."""
    rows, alpha_judges, alpha_people = report.rows, report.alpha_judges, report.alpha_people

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f}"

    lines = [
        f"{label}",
        f"{'judge':<28} {'n':>4} {'accuracy [95% CI]':>24} {'kappa':>6} "
        f"{'tie|split':>9} {'tie|agree':>9}",
    ]
    for r in rows:
        acc = r.accuracy
        acc_text = "-" if acc.value is None else f"{acc.value:.3f} [{acc.low:.3f}, {acc.high:.3f}]"
        lines.append(
            f"{r.judge:<28} {r.items:>4} {acc_text:>24} {pct(r.kappa):>6} "
            f"{pct(r.tie_rate_when_people_split):>9} {pct(r.tie_rate_when_people_agree):>9}"
        )
    lines.append(
        f"alpha among judges {pct(alpha_judges)}; alpha among people {pct(alpha_people)} "
        "(nominal, same items)"
    )
    found = report.judge_correlation
    if found is not None and found.effective_votes is not None:
        ci = found.effective_votes_ci
        interval = "" if ci is None else f" [{ci[0]:.2f}, {ci[1]:.2f}]"
        lines.append(
            f"independent votes {found.effective_votes:.2f}{interval} of "
            f"{len(found.correlation)} judges (error correlation on {found.units} items)"
        )
        if found.warning:
            lines.append(f"warning: {found.warning}")
    for judge, dimensions in report.dimensions.items():
        parts = [f"{d} {pct(a.alpha)} (n={a.pairs})" for d, a in dimensions.items()]
        lines.append(f"{judge} vs people's scores, interval alpha: " + "; ".join(parts))
    return "\n".join(lines)
