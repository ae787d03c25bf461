"""The result records: agreement, vote, decision, usage, and the whole debate result."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from debate.records._config import RunConfig, Thresholds
from debate.records._deliberation import DeliberationSummary
from debate.records._transcript import (
    Frozen,
    JudgeEvaluation,
    Outcome,
    Side,
    Transcript,
    is_unset,
)
from debate.stats import Aggregate


class Agreement(Frozen):
    """Inter-judge agreement. ``None`` where a statistic is undefined, never a made-up 1.0."""

    alpha: float | None
    """Krippendorff's alpha (interval) on calibrated argument scores."""
    alpha_raw: float | None
    """The same on raw weighted argument scores (1-10 scale)."""
    alpha_by_dimension: dict[str, float | None]
    """Interval alpha per rubric dimension, on the judges' raw 1-10 scores."""
    kappa: float | None
    """Fleiss' kappa on standings, matched by argument id."""
    argument_variance: dict[str, float | None]
    """Per argument: variance (ddof=1) across judges of the offset-corrected score (each
    judge's mean removed, 1-10 scale); the divergence check compares it with 3.0."""
    judges_scored: int
    judges_unscored: int
    correlation: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    """Each pair of scored judges' Pearson correlation over the arguments' scores: their
    agreement beyond chance (no labels in a debate). Empty with fewer than two judges; None
    with fewer than three arguments, where two points always correlate +-1."""
    correlation_kind: Literal["agreement", "error"] = "agreement"
    """``agreement``: correlation of the judges' scores (no labels); ``error``: of their
    errors against labels."""
    effective_votes: float | None = None
    """How many independent votes the scored judges are worth (``effective_votes_method``):
    about 1 for copies of one judge, about their number for uncorrelated judges."""
    effective_votes_ci: tuple[float, float] | None = None
    """Its percentile interval (level of the vote's), from the bootstrap over the arguments."""
    effective_votes_method: str | None = None
    """The estimator: the design effect of the mean pairwise correlation (Kish 1965)."""
    clusters: list[list[str]] = Field(default_factory=list)
    """Groups of judges whose scores correlate at least 0.9: they move as one vote."""
    warning: str | None = None
    """Set when the scored judges are worth fewer than two independent votes: names the
    judges that move together."""
    ci_widening: float | None = None
    """Factor the margin intervals' half-widths were widened by for correlated judges: the
    judges' share of the bootstrap's variance times the design effect ``w'Rw / w'w`` (1: the
    judges are as independent as the bootstrap assumes)."""

    def votes_text(self) -> str:
        """``2.61 of 4 (interval 1.90 to 3.40); interval widened x1.08``, or ``undefined``."""
        if self.effective_votes is None:
            return "undefined"
        text = f"{self.effective_votes:.2f} of {self.judges_scored}"
        if self.effective_votes_ci is not None:
            low, high = self.effective_votes_ci
            text += f" (interval {low:.2f} to {high:.2f})"
        if self.ci_widening is not None and self.ci_widening > 1.0:
            text += f"; margin interval widened x{self.ci_widening:.2f}"
        return text


TopicSource = Literal["config", "keywords", "model", "keywords_fallback"]


class Vote(Frozen):
    """Weighted vote: per-side means, weighted across judges, calibrated and in points.

    The calibrated margin is what the judges' weights and the interval test act on (a harsh
    and a lenient judge who rank alike count alike); the margin in points says how big the
    effect is on the judges' own 1-10 scale, which is what the words in reasons follow.
    """

    pro: float | None
    con: float | None
    margin: float | None
    """``pro - con`` of calibrated scores (0-1 for min-max, standard units for z-score)."""
    margin_ci: tuple[float, float] | None = None
    """Percentile interval of the margin (level ``confidence``) from resampling judges and
    arguments."""
    pro_points: float | None = None
    """Weighted mean of the judges' raw weighted 1-10 scores of PRO's arguments."""
    con_points: float | None = None
    """The same for CON's arguments."""
    margin_points: float | None = None
    """``pro_points - con_points``: the effect in points of the judges' 1-10 scale."""
    margin_points_ci: tuple[float, float] | None = None
    """Interval of ``margin_points`` (same resampling, same level as ``margin_ci``)."""
    confidence: float = 0.95
    """Level of both intervals (``Thresholds.confidence``)."""
    topic_type: str
    topic_source: TopicSource = "keywords"
    """Who chose the topic type: set by hand, the keyword table, the model classifier, or
    the keyword table after the classifier call failed."""
    judge_weights: dict[str, float]
    calibration: Literal["minmax", "zscore"]
    cluster_weights: dict[str, float] | None = None
    """The weights the vote used when some judges form a cluster (correlation >= 0.9, see
    ``Agreement.clusters``) smaller than the panel: each member's weight divided by the
    cluster's size, so copies of a judge count once. None: ``judge_weights`` as given."""
    aggregate: Aggregate = "weighted_mean"
    """How the judges' margins were combined (``Thresholds.aggregate``): for ``median``
    and ``trimmed_mean`` the margin aggregates each judge's margin, so it need not equal
    ``pro - con``; for ``majority`` pro and con are the shares of the weight voting each
    side and the margin is their difference."""


class Diagnostics(Frozen):
    """Where a split comes from: which judge, which rubric dimension, which arguments.

    ``None`` wherever the statistic is undefined (too few judges, or no variation).
    """

    alpha_without_judge: dict[str, float | None] = Field(default_factory=dict)
    """Per scored judge: alpha (calibrated scores) of the panel without that judge. A judge
    whose removal raises alpha most is the one the others disagree with."""
    alpha_by_dimension: dict[str, float | None] = Field(default_factory=dict)
    """Per rubric dimension: interval alpha on the judges' raw 1-10 scores."""
    argument_variance: dict[str, float | None] = Field(default_factory=dict)
    """Per argument: variance across judges of the offset-corrected score (1-10 scale)."""
    no_difference: bool = False
    """No scored judge told any argument from another: the panel sees no difference."""


class Decision(Frozen):
    """The verdict, or the honest statement that there is none."""

    outcome: Outcome
    winner: Side | None
    reasons: list[str]
    high_variance_arguments: list[str] = Field(default_factory=list)
    thresholds: Thresholds
    recommendation: str
    diagnostics: Diagnostics = Field(default_factory=Diagnostics)
    lead: Side | None = None
    """The side the judges' weighted evidence favours, whatever the outcome (None when even):
    what a declared verdict would name, and what ``p_agree`` is about."""
    evidence: float | None = None
    """The panel's weighted log-odds for PRO: each judge's PRO - CON margin as evidence in
    [-1, 1] (a whole vote from 3 points), times its weight, summed."""
    p_agree: float | None = Field(default=None, ge=0, le=1)
    """The probability that people would agree with ``lead``: calibrated by a policy when
    ``p_agree_calibrated``, else ``sigmoid(|evidence|)``, which orders decisions but is not
    a probability of anything."""
    p_agree_calibrated: bool = False
    judge_evidence: dict[str, float | None] = Field(default_factory=dict)
    """Each scored judge's evidence for PRO in [-1, 1]: its PRO - CON margin of mean raw
    scores over 3 points, clipped; what a policy weighs with its own weights."""
    gate: Outcome | None = None
    """Under a policy: what the decision rules alone said (``outcome`` is then the policy's
    ``winner`` or ``escalate``). None without a policy."""
    tier: int = Field(default=1, ge=1)
    """The cascade tier that decided: this decision is on the judges of tiers 1 to ``tier``
    together (1 without tiers; see ``cascade`` in the result)."""


class TokenCounts(Frozen):
    """Tokens of one model (or one call)."""

    calls: int = 0
    """HTTP or in-process requests, every retry included."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    """Prompt tokens the provider served from its prefix cache."""


class CallUsage(Frozen):
    """One logical call (a debater move or a judge reading), retries included."""

    phase: str
    actor: str
    round: int | None = None
    model: str
    """The model as it was asked for."""
    endpoint: str | None = None
    """The endpoint the call was sent to (``default`` for ``--base-url``); ``None`` for the
    embedded model, a test double or a model the caller built without an endpoint name."""
    answered_by: str | None = None
    """The model that answered, as the server reported it in its reply (a snapshot of
    ``model``, say), else ``model``; ``None`` when no reply came back at all."""
    attempts: int
    ok: bool
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int


class SkippedCall(Frozen):
    """A call that was not made: its worst case could have taken the run past its budget."""

    phase: str
    actor: str
    round: int | None = None
    model: str
    attempt: int
    """1 for a call never sent; more for a re-ask or retry of a call already under way."""
    reason: str
    """``budget: ...``, with the worst case and what was spent when it was refused."""


class BudgetCaps(Frozen):
    """The budget a run was given, and what had been spent under it when the run ended."""

    max_cost_usd: float | None = None
    max_tokens: int | None = None
    spent_usd: float
    """Cost of the requests sent under this budget (replies replayed from the cache are free);
    across every run sharing it (a whole batch or calibration), when the result was made."""
    spent_tokens: int
    """Prompt + completion tokens of the same requests."""


class Usage(TokenCounts):
    """Model usage of a run, from the providers' usage fields."""

    retries: int = 0
    by_model: dict[str, TokenCounts] = Field(default_factory=dict)
    per_call: list[CallUsage] = Field(default_factory=list)
    cost_usd: float | None = None
    """From the price table (the shipped one unless another is given); None when a model
    used is not in it (never a guess)."""
    skipped: list[SkippedCall] = Field(default_factory=list)
    """Calls not made because of the budget (nothing is filled in for them)."""
    budget: BudgetCaps | None = None
    """The budget in force, if any."""


class TierStep(Frozen):
    """One tier of a cascade: its judges, whether they were asked, why it went on or not."""

    tier: int = Field(ge=1)
    judges: list[str]
    """The judges (or council reviewers) of this tier, in config order."""
    asked: bool
    """Whether this tier's judges were asked (a tier above the one that decided is not)."""
    escalated: bool = False
    """Whether the next tier was asked after this one's decision."""
    reason: str
    """Why the cascade stopped here or asked the next tier (the escalation rule's words);
    for a tier not asked, which tier decided instead."""
    usage: TokenCounts = Field(default_factory=TokenCounts)
    """Requests and tokens of this tier's calls, re-asks and retries included (all 0 for a
    tier not asked)."""
    cost_usd: float | None = None
    """Cost of those calls (None when a model is not priced, or the tier was not asked)."""


class Cascade(Frozen):
    """What asking the tiers in turn cost, against asking every tier on every item.

    Only calls made are measured: a tier not asked is counted at one call per reading it
    would have made (its re-asks and retries cannot be known), and its tokens not at all.
    """

    steps: list[TierStep]
    """Every configured tier, lowest first (one step without tiers)."""
    calls: int
    """Requests the judges made, every tier asked included (``usage.calls`` also counts
    the debaters and the topic classifier)."""
    calls_all_tiers: int
    """``calls`` plus one per reading of every judge not asked: what asking every tier
    would have made."""
    tokens: int
    """Prompt and completion tokens of the judges' calls."""
    cost_usd: float | None
    """Cost of the judges' calls; None when a model is not priced."""


class PanelResult(Frozen):
    """What the panel returns for a transcript."""

    evaluations: list[JudgeEvaluation]
    agreement: Agreement
    vote: Vote
    decision: Decision
    usage: Usage
    seed: int
    """The seed of the presentation orders and sampling (drawn when none was given)."""
    cascade: Cascade | None = None
    """The tiers asked, why, and what they cost (:mod:`debate.panel._cascade`)."""
    deliberation: DeliberationSummary | None = Field(default=None, exclude_if=is_unset)
    """With deliberation: who moved, where, by how much, toward whom (absent without)."""
    first_decision: Decision | None = Field(default=None, exclude_if=is_unset)
    """With deliberation: the decision on the first-round scores (``decision`` is on the
    final ones), so a reader sees whether deliberation changed the verdict."""


class DebateResult(Frozen):
    """The whole result, written to ``OUT/result.json``; integrations rely on these keys."""

    topic: str
    transcript: Transcript
    debaters: dict[str, str] = Field(default_factory=dict)
    """Model of each side (``PRO``/``CON``); empty for a transcript judged as given."""
    evaluations: list[JudgeEvaluation]
    agreement: Agreement
    vote: Vote
    decision: Decision
    usage: Usage
    config: RunConfig
    seed: int | None
    version: str
    cascade: Cascade | None = None
    """The tiers asked, why, and what they cost; None in results written before tiers."""
    deliberation: DeliberationSummary | None = Field(default=None, exclude_if=is_unset)
    """With deliberation (``--deliberate``): what it did; absent without."""
    first_decision: Decision | None = Field(default=None, exclude_if=is_unset)
    """With deliberation: the first round's decision; absent without."""
