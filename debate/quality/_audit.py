"""Bias audit across recorded runs: position, first side, length, self-preference, council.

Position is measured within arguments, never pooled across them: the same argument read
first by one judge and later by another (the panel's counterbalanced orders), or by the
same judge in its swap reading. Each figure is the coefficient of a least-squares fit of the
judge's own 1-10 score with fixed effects for the argument, the reading and the judge's
side (see :mod:`debate.quality._effects`), so a judge that favours one side, or a strong
argument that happens to be read first, is not mistaken for position bias. Intervals are
95 %, cluster-robust by run. Below ``MIN_SAMPLE`` observations or ``MIN_RUNS`` runs the
audit says the sample is too small instead of printing a number as if it meant something;
when no argument was ever read at two positions (a fixed order without the swap check) it
says the position effect cannot be told apart from the arguments.

Council runs are audited with ADR-017's measure: the correlation of a reviewer's score with
the display position, within candidates, judged against the 0.1 bound; and with ADR-010's
harsh/generous check: a reviewer's offset from the other reviewers on the same candidates.
(Length against score is in each council report: the store keeps no candidate text.)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from debate.quality._effects import FloatArray, IntArray, Slope, absorb, codes, fit
from debate.records import Frozen
from debate.storage import RunStore

MIN_SAMPLE = 30
MIN_RUNS = 5
BOUND = 0.1
"""ADR-017's success measure: |position-score correlation| below this."""
Z95 = 1.959963984540054
SAME_POSITION = (
    "not identifiable: each argument was read at one position only (a fixed order "
    "without the swap check)"
)


class Estimate(Frozen):
    """One audited figure."""

    value: float | None
    low: float | None
    high: float | None
    n: int
    runs: int | None = None
    """Runs the observations came from (the interval is clustered by run)."""
    unit: str | None = None
    note: str | None = None
    """Why there is no value (too small a sample, no variation, not identifiable)."""

    @property
    def covers_zero(self) -> bool | None:
        """Whether the interval includes 0 (None without an interval)."""
        if self.low is None or self.high is None:
            return None
        return self.low <= 0 <= self.high

    def text(self, digits: int = 3) -> str:
        """Human-readable form."""
        if self.value is None:
            return f"- ({self.note}; n={self.n})"
        assert self.low is not None and self.high is not None
        unit = f" {self.unit}" if self.unit else ""
        runs = f", {self.runs} runs" if self.runs is not None else ""
        return (
            f"{self.value:+.{digits}f}{unit} [{self.low:+.{digits}f}, {self.high:+.{digits}f}]"
            f" n={self.n}{runs}"
        )


class DebateFigures(Frozen):
    """The position, side, length and self-preference figures of a judge or the panel."""

    primacy: Estimate
    """Points an argument gains when read first, against the same argument read later."""
    position_step: Estimate
    """Points per position later in the reading, within arguments (negative: earlier wins)."""
    first_side_advantage: Estimate
    """Points a side's arguments gain when that side is shown first, within arguments."""
    length_correlation: Estimate
    """Partial correlation of score with argument length, within readings and sides. Length
    cannot be separated from quality (an argument has one length), so read it as a lead."""
    self_preference: Estimate
    """Points the judge gives arguments its own model wrote above what the panel gives the
    same arguments (0 = fair)."""


class JudgeAudit(DebateFigures):
    """The audit of one judge identity (role x model)."""

    role: str
    model: str


class ReviewerAudit(Frozen):
    """ADR-017's position measure for one council reviewer (or all of them pooled)."""

    reviewer: str
    model: str
    correlation: Estimate
    """Within-candidate correlation of score with display position (0 = first shown;
    negative: favours what it reads first)."""
    step: Estimate
    """Points per display position later, within candidates."""
    within_bound: bool | None
    """|correlation| below ADR-017's bound (None without an estimate)."""
    offset: Estimate | None = None
    """Points this reviewer scores above (+, generous) or below (-, harsh) the other
    reviewers on the same candidates (ADR-010), interval clustered by run; None pooled
    (the offsets of all reviewers average out by construction) and in older audits."""


class CouncilAudit(Frozen):
    """Position bias across the stored council runs."""

    bound: float = BOUND
    runs: int
    reviewers: list[ReviewerAudit]
    pooled: ReviewerAudit | None


class Audit(Frozen):
    """Everything ``debate audit`` reports."""

    runs: int
    judges: list[JudgeAudit]
    pooled: DebateFigures | None
    council: CouncilAudit


def too_small(n: int, minimum: int = MIN_SAMPLE, what: str = "") -> Estimate:
    """The answer when there are too few observations to say anything."""
    return Estimate(
        value=None, low=None, high=None, n=n, note=f"sample too small (< {minimum}{what})"
    )


def wilson(successes: int, n: int, minimum: int = MIN_SAMPLE) -> Estimate:
    """A proportion with its Wilson 95% interval (too small a sample below ``minimum``)."""
    if n < max(minimum, 1):
        return too_small(n, max(minimum, 1))
    p = successes / n
    denom = 1 + Z95**2 / n
    centre = (p + Z95**2 / (2 * n)) / denom
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / denom
    return Estimate(value=p, low=centre - half, high=centre + half, n=n)


class Design:
    """Observations as arrays: scores, fixed-effect codes, and who read each one.

    ``unit`` names the column that, with ``model``, identifies a judge (role) or a council
    reviewer; ``item`` the thing read (argument, candidate), coded within its run;
    ``reading`` one judge's reading of one run (with the ``reading`` column: the swap).
    """

    def __init__(
        self, rows: Sequence[dict[str, object]], unit: str, item: str, reading: str
    ) -> None:
        self.rows = rows
        self.y = self.column("score")
        self.run = codes([r["run_id"] for r in rows])
        self.item = codes([(r["run_id"], r[item]) for r in rows])
        self.reading = codes([(r["run_id"], r[reading], r.get("reading")) for r in rows])
        self.unit_keys = [(str(r[unit]), str(r["model"])) for r in rows]
        self.units = sorted(set(self.unit_keys))
        order = {key: i for i, key in enumerate(self.units)}
        self.unit_index = np.array([order[k] for k in self.unit_keys], dtype=np.int64)

    def column(self, name: str) -> FloatArray:
        """A numeric column as floats."""
        return np.array([float(r[name]) for r in self.rows], dtype=np.float64)  # type: ignore[arg-type]

    @property
    def runs(self) -> int:
        """How many runs the rows come from."""
        return int(np.unique(self.run).size)

    def counts(self) -> list[int]:
        """Observations per unit, in ``units`` order."""
        return [int(c) for c in np.bincount(self.unit_index, minlength=len(self.units))]


def estimates(
    design: Design,
    x: FloatArray,
    groupings: Sequence[IntArray],
    unit: str,
    *,
    scale: Callable[[int | None], float] | None = None,
    absorbed: str = SAME_POSITION,
) -> tuple[list[Estimate], Estimate]:
    """Per unit (judge or reviewer, all in one joint fit) and pooled coefficients of ``x``.

    ``scale(unit index or None for pooled)`` turns a slope into a correlation.
    """
    counts = design.counts()
    n, runs = len(design.rows), design.runs
    if runs < MIN_RUNS:
        small = [too_small(c, MIN_RUNS, " runs") for c in counts]
        return small, too_small(n, MIN_RUNS, " runs")
    onehot = np.eye(len(design.units))[design.unit_index]
    joint = fit(design.y, x[:, None] * onehot, groupings, design.run, absorbed=absorbed)
    pooled = fit(design.y, x[:, None], groupings, design.run, absorbed=absorbed)[0]

    def estimate(slope: Slope, count: int, index: int | None) -> Estimate:
        mine = x if index is None else x[design.unit_index == index]
        if count < MIN_SAMPLE:
            return too_small(count)
        if np.ptp(mine) == 0:
            return Estimate(value=None, low=None, high=None, n=count, note="no variation")
        factor = None if scale is None else scale(index)
        return _estimate(slope, count, runs, unit, factor)

    per_unit = [estimate(s, c, i) for i, (s, c) in enumerate(zip(joint, counts, strict=True))]
    return per_unit, estimate(pooled, n, None)


def _estimate(slope: Slope, n: int, runs: int, unit: str, factor: float | None) -> Estimate:
    """A slope as an estimate; times ``factor`` (and within [-1, 1]) for a correlation."""
    if slope.value is None or slope.low is None or slope.high is None:
        return Estimate(value=None, low=None, high=None, n=n, note=slope.note)
    values = [slope.value, slope.low, slope.high]
    if factor is not None:
        values = [max(-1.0, min(1.0, v * factor)) for v in values]
    return Estimate(
        value=values[0], low=values[1], high=values[2], n=n, runs=runs, unit=unit or None
    )


def standardiser(
    design: Design, x: FloatArray, groupings: Sequence[IntArray]
) -> Callable[[int | None], float]:
    """sd(x) / sd(score) within the effects, on one unit's rows or all: slope -> correlation."""
    residual = absorb(np.column_stack([design.y, x]), groupings)

    def scale(index: int | None) -> float:
        rows = residual if index is None else residual[design.unit_index == index]
        sy = float(np.sqrt((rows[:, 0] ** 2).sum()))
        return 0.0 if sy == 0 else float(np.sqrt((rows[:, 1] ** 2).sum())) / sy

    return scale


def debate_figures(rows: Sequence[dict[str, object]]) -> tuple[list[JudgeAudit], DebateFigures]:
    """Every debate figure, per judge identity and pooled over the panel."""
    design = Design(
        [{**r, "score": r["raw_score"]} for r in rows],
        unit="role",
        item="argument_id",
        reading="judge",
    )
    judge_side = codes([(*key, r["side"]) for key, r in zip(design.unit_keys, rows, strict=True)])
    within = [design.item, design.reading, judge_side]
    position = design.column("shown_position")
    first_side = np.array([float(r["side"] == r["side_shown_first"]) for r in rows])
    own = np.array([float(r["author_model"] == r["model"]) for r in rows], dtype=np.float64)
    length = design.column("length_chars")
    figures: dict[str, tuple[list[Estimate], Estimate]] = {
        "primacy": estimates(design, (position == 0).astype(float), within, "points"),
        "position_step": estimates(design, position, within, "points/position"),
        "first_side_advantage": estimates(design, first_side, within, "points"),
        "length_correlation": estimates(
            design,
            length,
            [design.reading, judge_side],
            "",
            scale=standardiser(design, length, [design.reading, judge_side]),
            absorbed="not identifiable: length does not vary within a reading's sides",
        ),
        "self_preference": _self_preference(design, own),
    }
    judges = [
        JudgeAudit(role=role, model=model, **{k: v[0][i] for k, v in figures.items()})
        for i, (role, model) in enumerate(design.units)
    ]
    return judges, DebateFigures(**{k: v[1] for k, v in figures.items()})


def _self_preference(design: Design, own: FloatArray) -> tuple[list[Estimate], Estimate]:
    """Own-model arguments against the panel's scores of the same arguments."""
    if not own.any():
        missing = Estimate(value=None, low=None, high=None, n=0, note="no own-model arguments")
        return [missing] * len(design.units), missing
    return estimates(
        design,
        own,
        [design.item, design.reading],
        "points",
        absorbed="not identifiable: no argument was scored both by a judge of its "
        "author's model and by another judge",
    )


def reviewer_offset(rows: Sequence[dict[str, object]], reviewer: tuple[str, str]) -> Estimate:
    """The reviewer's score minus the others' mean on the same candidate, over every run.

    The mean difference with a cluster-robust (by run) t interval, G - 1 degrees of
    freedom: candidates of one run share that run's question and reviewers' mood.
    """
    from scipy import stats  # the audit command already pays for scipy

    by_item: dict[tuple[object, object], dict[tuple[str, str], float]] = {}
    for r in rows:
        key = (str(r["reviewer"]), str(r["model"]))
        by_item.setdefault((r["run_id"], r["candidate"]), {})[key] = float(r["score"])  # type: ignore[arg-type]
    runs: list[object] = []
    differences: list[float] = []
    for (run, _), scores in by_item.items():
        others = [v for k, v in scores.items() if k != reviewer]
        if reviewer in scores and others:
            runs.append(run)
            differences.append(scores[reviewer] - float(np.mean(others)))
    n, groups = len(differences), len(set(runs))
    if groups < MIN_RUNS:
        return too_small(n, MIN_RUNS, " runs")
    if n < MIN_SAMPLE:
        return too_small(n)
    d = np.asarray(differences)
    mean = float(d.mean())
    cluster = codes(runs)
    sums = np.bincount(cluster, weights=d - mean)
    se = math.sqrt(groups / (groups - 1) * float((sums**2).sum())) / n
    half = float(stats.t.ppf(0.975, groups - 1)) * se
    return Estimate(value=mean, low=mean - half, high=mean + half, n=n, runs=groups, unit="points")


def council_figures(rows: Sequence[dict[str, object]]) -> CouncilAudit:
    """ADR-017's measure per reviewer and pooled; self-votes are left out, as in the ranking."""
    counted = [r for r in rows if not r["self_vote"]]
    if not counted:
        return CouncilAudit(runs=0, reviewers=[], pooled=None)
    design = Design(counted, unit="reviewer", item="candidate", reading="reviewer")
    within = [design.item, design.reading]
    position = design.column("shown_position")
    scale = standardiser(design, position, within)
    same = "not identifiable: every reviewer saw each candidate at the same position"
    correlation = estimates(design, position, within, "", scale=scale, absorbed=same)
    step = estimates(design, position, within, "points/position", absorbed=same)

    def reviewer(
        name: str, model: str, r: Estimate, s: Estimate, offset: Estimate | None
    ) -> ReviewerAudit:
        inside = None if r.value is None else abs(r.value) < BOUND
        return ReviewerAudit(
            reviewer=name,
            model=model,
            correlation=r,
            step=s,
            within_bound=inside,
            offset=offset,
        )

    return CouncilAudit(
        runs=design.runs,
        reviewers=[
            reviewer(
                name, model, correlation[0][i], step[0][i], reviewer_offset(counted, (name, model))
            )
            for i, (name, model) in enumerate(design.units)
        ],
        pooled=reviewer("all", "all", correlation[1], step[1], None),
    )


def audit(store: RunStore) -> Audit:
    """Audit every judge identity and council reviewer in the store."""
    rows = store.observations()
    judges, pooled = debate_figures(rows) if rows else ([], None)
    return Audit(
        runs=store.count_runs(),
        judges=judges,
        pooled=pooled,
        council=council_figures(store.council_readings()),
    )
