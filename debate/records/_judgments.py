"""Judgments made elsewhere, as tables, and the decisions the panel draws from them.

A *judgments table* is the documented tidy long format that ``debate decide`` and
``debate validity`` read and that ``debate calibrate`` writes (see ``docs/judgments.md``):

* score rows ``item, option, judge, dimension, score`` (optional ``unit``, ``order``,
  ``standing``), on a declared scale that is rescaled to the rubric's 1-10 so that every
  threshold keeps the meaning it was written for;
* verdict rows ``item, judge, verdict`` with ``verdict`` in ``A``, ``B``, ``tie`` (optional
  ``order`` ``AB``/``BA`` when a judge read both orders).

People's labels are tables of the same kind whose judges are people. Tables are columnar
(one integer code array per column) because a decision file of 100,000 items x 8 judges is
a million rows: one pydantic object per row would cost seconds before any statistic. What
crosses a boundary outward (one decision per item, the summary) is pydantic.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from debate.records._result import Agreement, Diagnostics
from debate.records._transcript import Frozen, Outcome

if TYPE_CHECKING:  # the arrays' types only: a record is defined without importing numpy
    import numpy as np
    from numpy.typing import NDArray

RUBRIC_LOW, RUBRIC_HIGH = 1.0, 10.0
MAX_SCALE_SPAN = sys.float_info.max / (RUBRIC_HIGH - RUBRIC_LOW)
"""The widest scale a table may declare: a score is rescaled onto 1-10 by multiplying its
distance from LOW by 9 first, which must not overflow."""
VERDICTS: tuple[str, str, str] = ("A", "B", "tie")
"""Verdict codes 0, 1, 2: the first option is better, the second is, neither."""
ORDERS: tuple[str, str, str] = ("", "AB", "BA")
"""Order codes 0, 1, 2: not given, the options as listed, the options swapped."""
NO_CALL = -1
"""Code of a missing verdict or label (a judge that gave none, an item people split on)."""
TableKind = Literal["scores", "verdicts"]


class Scale(Frozen):
    """The score scale a table declares (``1-5``); scores are rescaled to 1-10 on reading."""

    low: float
    high: float

    @model_validator(mode="after")
    def _ordered(self) -> Scale:
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            raise ValueError(
                f"scale: {self.low:g}-{self.high:g} has a bound too large for a number; "
                "write two ordinary numbers, e.g. 1-5"
            )
        if not self.high > self.low:
            raise ValueError(f"scale: high {self.high} must exceed low {self.low}; write e.g. 1-5")
        if not math.isfinite((self.high - self.low) * (RUBRIC_HIGH - RUBRIC_LOW)):
            raise ValueError(
                f"scale: {self.low:g}-{self.high:g} spans too far: rescaling a score onto "
                f"{RUBRIC_LOW:g}-{RUBRIC_HIGH:g} would overflow (the span must stay below "
                f"{MAX_SCALE_SPAN:.3g}); use a smaller scale, e.g. 1-5"
            )
        return self

    def to_rubric(self, scores: NDArray[np.float64]) -> NDArray[np.float64]:
        """Linear map of the declared scale onto 1-10 (low -> 1, high -> 10)."""
        span = RUBRIC_HIGH - RUBRIC_LOW
        rescaled: NDArray[np.float64] = RUBRIC_LOW + span * (scores - self.low) / (
            self.high - self.low
        )
        return rescaled

    def __str__(self) -> str:
        return f"{self.low:g}-{self.high:g}"


@dataclass(frozen=True)
class ScoreTable:
    """Score rows, columnar.

    Each name tuple lists the distinct values in first-seen order; the row arrays hold
    indices into them.
    """

    source: str
    scale: Scale
    items: tuple[str, ...]
    options: tuple[str, ...]
    judges: tuple[str, ...]
    dimensions: tuple[str, ...]
    units: tuple[str, ...]
    """Scored things within an option (a debate's argument ids); the option's own name when
    the table has no ``unit`` column."""
    item: NDArray[np.int32]
    option: NDArray[np.int32]
    unit: NDArray[np.int32]
    judge: NDArray[np.int32]
    dimension: NDArray[np.int32]
    score: NDArray[np.float64]
    """As read, on the declared scale (``scale.to_rubric`` gives 1-10)."""
    order: NDArray[np.int8]
    """Index into :data:`ORDERS`; readings of both orders are averaged, as a live panel does."""
    standing: NDArray[np.int8]
    """Index into ``standings``, or :data:`NO_CALL` when the row gives none."""
    standings: tuple[str, ...] = ()
    ignored_columns: tuple[str, ...] = ()
    kind: TableKind = field(default="scores", init=False)

    @property
    def rows(self) -> int:
        return int(self.score.shape[0])


@dataclass(frozen=True)
class VerdictTable:
    """Verdict rows on pairs, columnar (see :class:`ScoreTable`)."""

    source: str
    items: tuple[str, ...]
    judges: tuple[str, ...]
    item: NDArray[np.int32]
    judge: NDArray[np.int32]
    verdict: NDArray[np.int8]
    """Index into :data:`VERDICTS`."""
    order: NDArray[np.int8]
    ignored_columns: tuple[str, ...] = ()
    probability: NDArray[np.float64] | None = None
    """The judge's own probability that the first option (A) is better, per row; NaN where
    the row gives none, None when the table has no ``probability`` column. A judge's
    confidence is evidence the panel weighs (see :mod:`debate.panel._evidence`)."""
    kind: TableKind = field(default="verdicts", init=False)

    @property
    def rows(self) -> int:
        return int(self.verdict.shape[0])


Table = ScoreTable | VerdictTable


class ItemDecision(Frozen):
    """The panel's decision on one pair of options of one item, from recorded judgments.

    An item with two options gives one decision; an item with more options gives one per
    pair (first-seen order), each decided by the same rules as a live debate with the
    first option as PRO and the second as CON.
    """

    item: str
    options: tuple[str, str]
    dimension: str | None = None
    """The one dimension decided on, or None for all dimensions (weighted) and verdicts."""
    outcome: Outcome
    winner: str | None
    """The winning option's name, only when ``outcome`` is ``winner``."""
    margin: float | None
    """Positive favours ``options[0]``: the calibrated weighted margin (scores) or the
    weighted share of votes for A minus that for B (verdicts, -1..1)."""
    margin_points: float | None = None
    """Scores only: the weighted margin in points of the 1-10 scale."""
    interval: tuple[float, float] | None = None
    """The margin's interval at ``thresholds.confidence`` (bootstrap over judges, and units)."""
    confidence: float = Field(ge=0)
    """How far the evidence is from a coin toss, for ranking declared verdicts
    (risk-coverage): the distance of ``interval`` from 0 when it excludes 0, else 0; for
    verdicts, ``abs(margin)`` when the interval is degenerate."""
    agreement: Agreement | None = None
    """Scores only: the same agreement statistics as a live panel's."""
    shares: dict[str, float] | None = None
    """Verdicts only: the weighted share of A, B and tie among judges who gave a verdict."""
    judge_margins: dict[str, float | None]
    """Each judge's own margin (points for scores, +1/0/-1 for verdicts; positive favours
    ``options[0]``); None for a judge who gave nothing on this pair (unscored)."""
    weights: dict[str, float]
    reasons: list[str]
    diagnostics: Diagnostics | None = None
    lead: str | None = None
    """The option the panel's weighted evidence favours, whatever the outcome (None when the
    evidence is even): what a declared verdict would name, and what ``p_agree`` is about."""
    evidence: float | None = None
    """The panel's weighted log-odds ``L`` (positive favours ``options[0]``): each judge's
    evidence in [-1, 1] times its weight, summed (:mod:`debate.panel._evidence`)."""
    p_agree: float | None = Field(default=None, ge=0, le=1)
    """The probability that people's majority agrees with ``lead``: calibrated on labelled
    items when ``p_agree_calibrated``, else ``sigmoid(|evidence|)``, a score that orders
    decisions but is not a probability of anything."""
    p_agree_calibrated: bool = False
    gate: Outcome | None = None
    """Under a policy: what the decision rules alone said (the outcome is then the policy's
    ``winner`` or ``escalate``). None without a policy, where ``outcome`` is the rules'."""
    tier: int | None = None
    """Under a cascade policy: the tier whose judges decided (or the last one asked)."""


def interval_confidence(interval: tuple[float, float] | None) -> float:
    """:attr:`ItemDecision.confidence`: the interval's distance from 0 when it excludes 0.

    One definition for both engines, so that score and verdict decisions rank alike.
    """
    if interval is None:
        return 0.0
    low, high = interval
    return low if low > 0 else -high if high < 0 else 0.0


class CascadeCost(Frozen):
    """What a cascade policy read against asking every tier on every item."""

    tiers: list[int]
    declared: list[int]
    """Units declared at each tier."""
    escalated: int
    """Units no tier declared: left to people."""
    judgments_used: int
    """Judges' judgments the cascade read (a unit stopped at tier k reads tiers 1..k)."""
    judgments_all_tiers: int
    """What reading every tier's judges on every unit would have taken."""


class DecideSummary(Frozen):
    """What ``debate decide`` read and concluded, over all items."""

    source: str
    kind: TableKind
    scale: str | None = None
    rows: int
    items: int
    decisions: int
    judges: list[str]
    dimensions: list[str] = Field(default_factory=list)
    dimension: str | None = None
    outcomes: dict[str, int]
    alpha: float | None = None
    """Krippendorff's alpha among the judges over the whole table (nominal on verdicts,
    interval on scores); None when undefined. Its band sets the advice in ``notes``."""
    weights: dict[str, float]
    weights_source: str
    """``equal``, ``latent`` (fitted from agreement alone), ``track-records:PATH`` or
    ``given``."""
    ignored_columns: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    cascade: CascadeCost | None = None
    """Under a policy: units per tier and what the cascade read against every tier."""


@dataclass(frozen=True)
class Calls:
    """One method's calls on every decision unit of a :class:`DecisionFrame`."""

    call: NDArray[np.int8]
    """Index into :data:`VERDICTS` (0 the first option, 1 the second, 2 tie), or
    :data:`NO_CALL` where the method gave nothing (an unscored judge)."""
    declared: NDArray[np.bool_]
    """Whether the method commits to ``call``: for a gated panel, outcome ``winner``; for a
    single judge or an ungated vote, a call of 0 or 1."""
    confidence: NDArray[np.float64]
    """Larger is surer; orders the declared calls for the risk-coverage curve."""
    outcome: NDArray[np.int8] | None = None
    """Gated panels only: index into ``OUTCOMES``."""
    lead: NDArray[np.int8] | None = None
    """Panels only: the option the weighted evidence favours on every unit (0, 1), whatever
    the outcome; :data:`NO_CALL` where the evidence is even."""
    p_agree: NDArray[np.float64] | None = None
    """Panels only: the lead's ``p_agree`` (0 where there is no lead); it ranks every unit
    for the risk-coverage curve, which then runs to 100 % coverage."""
    calibrated: bool = False
    """``p_agree`` was calibrated against people on the other folds."""


OUTCOMES: tuple[str, ...] = ("winner", "too_close", "irreconcilable", "insufficient", "escalate")


@dataclass(frozen=True)
class OptionScores:
    """Score data only: people's mean and each method's score per (item, option).

    For the rank correlations (Spearman, Kendall) with people.
    """

    group: NDArray[np.int32]
    """Item index of each row."""
    people: NDArray[np.float64]
    """People's mean score (1-10 scale); NaN where no person scored."""
    methods: dict[str, NDArray[np.float64]]
    """Panel scores: each judge's weighted mean over the judges that scored (1-10 scale)."""
    judges: dict[str, NDArray[np.float64]]
    """Each judge's own score (NaN where it gave none)."""


@dataclass(frozen=True)
class DecisionFrame:
    """Every decision unit of a validity run (an item's pair of options), cross-fitted.

    ``methods`` holds the panels: ``majority`` (equal weights, ungated: the naive
    majority for verdicts, the plain mean for scores), ``equal``, ``labels`` and ``latent``
    (gated panels with equal, label-trained and latent-class weights); ``judges`` holds
    every single judge. Rows of one item share a fold: items are never split.
    """

    items: tuple[str, ...]
    group: NDArray[np.int32]
    """Item index of each decision unit."""
    fold: NDArray[np.int32]
    label: NDArray[np.int8]
    """People's call (index into VERDICTS), or NO_CALL where people have no majority."""
    people_split: NDArray[np.bool_]
    """People disagreed on the unit: their majority holds less than 3/4 of them."""
    methods: dict[str, Calls]
    judges: dict[str, Calls]
    dimension: str | None = None
    option_scores: OptionScores | None = None
    weights_by_fold: dict[str, list[dict[str, float]]] = field(default_factory=dict)
    """Per weighting (``labels``, ``latent``), the judge weights each fold was decided with."""
    options: tuple[tuple[str, str], ...] = ()
    """Each unit's pair of option names (first, second), for the tidy table; empty when the
    builder does not name them."""
    evidence: NDArray[np.float64] | None = None
    """``units x judges``: each judge's evidence (see :mod:`debate.panel._evidence`), from
    which a policy's weights and calibration are fitted."""
    notes: list[str] = field(default_factory=list)
    """What the report must say about how the frame was made (a fold's latent fit that did
    not converge, was read flipped or was refused)."""
