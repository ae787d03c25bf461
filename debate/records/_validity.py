"""The validity report: does the panel beat its best single judge, measured against people?

``debate validity`` cross-fits the panel on a judgments table (weights learned on the other
folds), compares every method's calls with people's labels, and returns one
:class:`ValidityReport`. Every figure is an :class:`Estimate` with a 95 % bootstrap interval
over items (all decision units of an item resampled together). An undefined figure (no
labelled unit, no declared call) is ``None`` with a note, never 0 or 1.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from debate.records._judgments import TableKind
from debate.records._policy import Policy
from debate.records._transcript import Frozen
from debate.stats import Bin

MethodKind = Literal["panel", "judge"]


class Estimate(Frozen):
    """One figure with its bootstrap 95 % interval.

    Mirrors :class:`debate.quality._audit.Estimate` (records cannot import quality); the
    interval here is a percentile bootstrap over items, not a cluster-robust normal one.
    """

    value: float | None
    """None when the figure is undefined (see ``note``)."""
    low: float | None = None
    high: float | None = None
    n: int = Field(ge=0)
    """Units (or option pairs, or scored options) the figure is computed on."""
    note: str | None = None
    """Why there is no value, or what limits the interval."""

    def text(self, digits: int = 3) -> str:
        """``0.812 [0.790, 0.833]``, or ``undefined (why)``."""
        if self.value is None:
            return f"undefined ({self.note})" if self.note else "undefined"
        if self.low is None or self.high is None:
            return f"{self.value:.{digits}f}"
        return f"{self.value:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


class MethodRow(Frozen):
    """One panel or one single judge against people."""

    name: str
    kind: MethodKind
    gated: bool
    """A gated panel declares a verdict only when its judges agree enough (``equal``,
    ``labels``, ``latent``); the naive majority and single judges are not gated."""
    accuracy: Estimate
    """Share of calls equal to people's majority, on units where people have one and the
    method made a call (a call of tie against a majority for A counts wrong)."""
    coverage: Estimate
    """Declared calls over labelled units."""
    declared_accuracy: Estimate
    """Accuracy on the labelled units where the method declares a verdict."""
    spearman: Estimate | None = None
    """Scores only: rank correlation of the method's score with people's mean score, over
    every scored option."""
    kendall: Estimate | None = None
    """Scores only: Kendall's tau-b of the same pairs of numbers."""
    pairwise_accuracy: Estimate | None = None
    """Scores only: share of pairs of options of one item that people's mean orders and the
    method orders the same way (a method tie counts wrong)."""


class RiskPoint(Frozen):
    """Accuracy of a method's most confident declared calls."""

    share: float
    """Fraction of the method's declared calls kept (the most confident first)."""
    coverage: float
    """Those calls as a fraction of all labelled units."""
    accuracy: float
    n: int


class RiskCoverage(Frozen):
    """The risk-coverage curve of one method (a gated panel or the best single judge)."""

    method: str
    kind: MethodKind
    labelled: int
    declared: int
    """Declared calls on labelled units (the curve's last point)."""
    graded: bool
    """Whether the confidence varies among the declared calls; without gradation the curve
    is flat at the method's declared accuracy."""
    points: list[RiskPoint]
    """The most confident 10 %, 20 %, ... 100 % of declared calls."""
    curve: list[RiskPoint]
    """The full step curve: one point at the end of each run of equal confidence."""


class EqualCoverage(Frozen):
    """A gated panel against the best single judge answering as often as the panel does."""

    panel: str
    judge: str
    coverage: float | None
    """The panel's coverage, at which the judge's most confident calls are taken."""
    panel_accuracy: Estimate
    judge_accuracy: Estimate
    difference: Estimate
    """Panel minus judge (paired: both on the same item resamples)."""
    basis: Literal["gate", "judge", "fixed"] = "gate"
    """Where the coverage comes from: the gated panel's own declared share (``gate``: the
    panel's declared verdicts against the judge's most confident calls), the judge's own
    share (``judge``: the panel's most confident leads by ``p_agree`` against every call the
    judge declares), or a fixed share of labelled units (``fixed``: both most confident)."""
    note: str | None = None


class SplitDetection(Frozen):
    """How well a gated panel's ``too_close``/``irreconcilable`` picks out people's splits."""

    method: str
    units: int
    flagged: int
    people_split: int
    precision: Estimate
    """Share of flagged units on which people disagreed."""
    recall: Estimate
    """Share of people's disagreements that the panel flagged."""
    base_rate: Estimate
    """Share of all units on which people disagreed (what flagging at random achieves)."""
    lift: Estimate
    """Precision over base rate: 1 is no better than chance."""


class AgreementComparison(Frozen):
    """Krippendorff's alpha among the judges beside alpha among the people, same items."""

    alpha_judges: float | None
    alpha_people: float | None
    level: str
    """Alpha's level of measurement (``nominal``, ``ordinal``, ``interval``)."""


class Calibration(Frozen):
    """How well a panel's ``p_agree`` matches how often people agreed (reliability)."""

    method: str
    calibrated: bool
    """``p_agree`` was calibrated on the other folds; else it is an uncalibrated score."""
    units: int
    """Labelled units with a lead, over which the bins and the error are computed."""
    ece: Estimate
    """Expected calibration error: the units' share-weighted gap between the mean
    ``p_agree`` and the agreement rate, per bin (item-cluster bootstrap interval)."""
    bins: list[Bin]


class JudgeCorrelation(Frozen):
    """How the judges' mistakes go together, and the independent votes they are worth."""

    kind: Literal["error", "agreement"] = "error"
    """``error``: correlation of the judges' errors against people's labels."""
    units: int
    """Labelled units every judge called (the correlation's columns)."""
    correlation: dict[str, dict[str, float | None]]
    """Each pair of judges' Pearson correlation of errors (1 wrong, 0 right)."""
    effective_votes: float | None
    """The design-effect number ``n / (1 + (n - 1) r)`` of the mean pairwise correlation."""
    effective_votes_ci: tuple[float, float] | None = None
    """95% percentile interval, items resampled."""
    method: str
    clusters: list[list[str]] = Field(default_factory=list)
    """Judges whose errors correlate at least 0.9."""
    warning: str | None = None
    """Set when the judges are worth fewer than two independent votes."""


class ValidityReport(Frozen):
    """Every method against people on one judgments table, cross-fitted."""

    source: str
    kind: TableKind
    dimension: str | None = None
    units: int
    """Decision units (an item's pair of options)."""
    labelled: int
    """Units on which people have a majority."""
    items: int
    folds: int
    seed: int
    bootstrap: int
    """Bootstrap replicates (items resampled with replacement)."""
    methods: list[MethodRow]
    best_judge: str | None
    best_judge_rule: str
    """How the best single judge was chosen (an oracle choice that favours it)."""
    risk_coverage: list[RiskCoverage]
    equal_coverage: list[EqualCoverage] = Field(default_factory=list)
    split_detection: list[SplitDetection] = Field(default_factory=list)
    agreement: AgreementComparison
    weights: dict[str, list[dict[str, float]]] = Field(default_factory=dict)
    """Per weighting (``labels``, ``latent``), the judge weights of each fold."""
    calibration: list[Calibration] = Field(default_factory=list)
    """Per panel: the reliability diagram of its ``p_agree`` and the calibration error."""
    policy: Policy | None = None
    """The policy chosen for a target agreement, with its guarantee, when one was asked."""
    policy_refusal: str | None = None
    """Why no policy could be chosen for the target asked (one line), when the report was
    kept without one: ``--dimension each`` refuses a dimension, not the others."""
    notes: list[str] = Field(default_factory=list)
    """What the numbers do and do not show."""
    judge_correlation: JudgeCorrelation | None = None
    """The judges' error correlation and effective independent votes (None: one judge)."""

    def method(self, name: str) -> MethodRow:
        """The row of one method or judge by name.

        Raises:
            KeyError: No row has that name.
        """
        for row in self.methods:
            if row.name == name:
                return row
        raise KeyError(f"no method or judge named {name!r}; have {[m.name for m in self.methods]}")
