"""From the judges' scores to the numbers a decision rests on, and the decision: one path.

A live panel (one debate) and recorded judgments (many items) both come here as a
:class:`ScoreBatch` of items of one shape; :func:`rule_batch` calibrates, measures
agreement, votes and diagnoses every item at once before :mod:`debate.panel._rules` decides
each. Only scored judges enter any statistic; an unscored judge is named in the reasons.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from debate.panel._ahead import each_block
from debate.panel._leads import leads
from debate.panel._margins import margin_intervals, widened
from debate.panel._rules import (
    Margins,
    Ruling,
    few_votes,
    judge_notes,
    ruling,
)
from debate.panel._samples import reading_spread, scored_readings, widen_for_readings
from debate.panel._stacked import interval_alphas, side_votes
from debate.records import (
    DIMENSIONS,
    STANDINGS,
    Agreement,
    Diagnostics,
    JudgeEvaluation,
    Side,
    Thresholds,
    TopicSource,
    Transcript,
    built,
)
from debate.stats import (
    ESTIMATOR,
    EXACT_INTERVAL_ITEMS,
    argument_variance_batch,
    calibrate_batch,
    cluster_batch,
    correlation_batch,
    design_effect,
    effective_votes,
    effective_votes_intervals,
    fleiss_kappa_batch,
    leave_one_out_alpha_batch,
    offset_corrected_batch,
    split_weights,
)
from debate.stats import Method as CalibrationMethod

FloatArray = NDArray[np.float64]

RESOLUTION = 6
"""Decimals the weighted scores are rounded to. Rubric scores are integers and weights are
given to a few decimals, so the rubric's resolution is far coarser than this; rounding
only removes the last-bit noise of floating-point sums (6.000000000000001 against
5.999999999999999), which would otherwise make equal scores unequal and let min-max
stretch that noise to the whole scale."""


@dataclass(frozen=True)
class ScoreMatrices:
    """The scored judges' numbers, rows in ``judges`` order, columns in argument-id order."""

    judges: list[str]
    ids: list[str]
    sides: list[Side]
    """The side of each column's argument."""
    raw: NDArray[np.float64]
    """Weighted argument score per judge (1-10 scale)."""
    dimensions: dict[str, NDArray[np.float64]]
    standings: list[list[str]]
    """Arguments x judges standings."""
    spread: tuple[FloatArray, FloatArray] | None = None
    """With repeated readings: per judge its mean per-reading evidence and the squared
    standard error of its margin (:func:`debate.panel._samples.reading_spread`)."""


def score_matrices(
    transcript: Transcript,
    scored: Sequence[JudgeEvaluation],
    weights_by_judge: Mapping[str, Mapping[str, float]],
) -> ScoreMatrices:
    """Assemble the matrices, matching every score to its argument by id."""
    ids = transcript.argument_ids
    raw = np.empty((len(scored), len(ids)))
    dims = {d: np.empty((len(scored), len(ids))) for d in DIMENSIONS}
    standings: list[list[str]] = [[] for _ in ids]
    for j, evaluation in enumerate(scored):
        assert evaluation.scores is not None  # scored evaluations carry scores
        readings = scored_readings(evaluation)  # every reading counts, averaged
        weights = weights_by_judge[evaluation.judge]
        # Per argument, every reading's score; a judge's row is filled at once (setting
        # cells one by one was most of this function's time).
        cells = [[r[arg_id] for r in readings] for arg_id in ids]
        for d in DIMENSIONS:
            dims[d][j] = [_mean([s.dimension(d) for s in cell]) for cell in cells]
        raw[j] = [_mean([s.weighted(weights) for s in cell]) for cell in cells]
        for a, cell in enumerate(cells):
            shown = {s.standing for s in cell}
            # A standing that moved with the presentation order is not a call the judge
            # made; it counts as UNCERTAIN in kappa.
            standings[a].append(shown.pop() if len(shown) == 1 else "UNCERTAIN")
    judges = [e.judge for e in scored]
    spread = None
    if any(e.readings is not None for e in scored):
        pro = [s == "PRO" for s in transcript.sides]
        found = [reading_spread(e, ids, pro, weights_by_judge[e.judge]) for e in scored]
        spread = (np.array([f[0] for f in found]), np.array([f[1] for f in found]))
    return ScoreMatrices(
        judges, ids, transcript.sides, np.round(raw, RESOLUTION), dims, standings, spread
    )


def _mean(values: Sequence[float]) -> float:
    """``np.mean`` of a judge's readings; one reading (the usual case) is its own mean.

    ``np.mean`` of a short list costs tens of microseconds, and a debate takes 120. Its sum
    starts at 0.0, so a -0.0 reading averages to 0.0 here too.
    """
    return float(values[0]) + 0.0 if len(values) == 1 else float(np.mean(values))


STATISTIC_DECIMALS = 9
"""Decimals every statistic of a decision is rounded to, far below any real effect. The
same judgments listed in another order (the options swapped, say) are summed in another
order, and floating-point noise must not move a statistic across a threshold (an alpha of
exactly 0.5, a variance of exactly 3.0) or a printed digit; rounding is symmetric, so a
negated margin stays negated."""


def _nums(values: FloatArray) -> Any:
    """Floats for the records (nested lists of any depth), rounded; None where undefined.

    Rounded to :data:`STATISTIC_DECIMALS`; NaN (undefined) becomes None.
    """
    [found] = _nums_each(values)
    return found


def _nums_each(*arrays: FloatArray) -> list[Any]:
    """:func:`_nums` of each array, rounded in one pass over them all (elementwise: the same)."""
    values = np.concatenate([a.ravel() for a in arrays])
    rounded = np.round(values, STATISTIC_DECIMALS) + 0.0
    undefined = ~np.isfinite(values)
    found, at = [], 0
    for a in arrays:
        part, gaps = rounded[at : at + a.size], undefined[at : at + a.size]
        at += a.size
        if gaps.any():  # only then an object array, to hold a None
            part = part.astype(object)
            part[gaps] = None
        found.append(part.reshape(np.shape(a)).tolist())
    return found


@dataclass(frozen=True)
class ScoreBatch:
    """Items of one shape: the same scored judges, the same sides of the units.

    Arrays are items first; every score is present (an unscored judge is not in
    ``judges``, never filled in).
    """

    judges: list[str]
    ids: list[list[str]]
    """Each item's unit (argument) ids, in column order."""
    is_pro: NDArray[np.bool_]
    """Per column: the unit belongs to PRO (the first option)."""
    raw: FloatArray
    """Items x judges x units: weighted scores on the 1-10 scale."""
    dimensions: dict[str, FloatArray]
    """Per rubric dimension, items x judges x units on the 1-10 scale."""
    standings: NDArray[np.intp] | None = None
    """Items x units x judges standing codes (any coding; UNCERTAIN a code of its own), or
    None when the judgments carry no standings (kappa is then undefined)."""
    spread: tuple[FloatArray, FloatArray] | None = None
    """Items x judges: each judge's mean per-reading evidence and the squared standard error
    of its margin in points, when judges read more than once; None for single readings."""
    seeds: tuple[int | None, ...] | None = None
    """Per item, the seed of its draws, where items of concurrent runs are decided together
    (stacked in runs of equal seeds, see :func:`~debate.panel._margins.seed_runs`); None: the
    setting's."""

    @property
    def size(self) -> int:
        return int(self.raw.shape[0])

    def sliced(self, block: slice) -> ScoreBatch:
        """The items of ``block``: every per-item field sliced, the judges and sides shared."""
        return replace(
            self,
            ids=self.ids[block],
            raw=self.raw[block],
            dimensions={name: scores[block] for name, scores in self.dimensions.items()},
            standings=None if self.standings is None else self.standings[block],
            spread=None if self.spread is None else (self.spread[0][block], self.spread[1][block]),
            seeds=None if self.seeds is None else self.seeds[block],
        )

    @cached_property
    def others(self) -> list[list[str]]:
        """Per judge, the other judges in order: the keys of its correlations, every item's."""
        return [self.judges[:a] + self.judges[a + 1 :] for a in range(len(self.judges))]

    @cached_property
    def no_correlation(self) -> dict[str, dict[str, None]]:
        """Every judge's correlations, each undefined: copied for an item with too few units."""
        return {
            j: dict.fromkeys(others) for j, others in zip(self.judges, self.others, strict=True)
        }


@dataclass(frozen=True)
class Setting:
    """How every item of a batch is decided."""

    thresholds: Thresholds
    calibration: CalibrationMethod
    seed: int | None
    topic_type: str
    topic_source: TopicSource = "keywords"


@dataclass(frozen=True)
class Context:
    """What the rules read about one item besides its numbers."""

    panel_size: int
    """Judges asked (scored or not)."""
    unscored: int = 0
    evaluations: Sequence[JudgeEvaluation] = ()
    """A live panel's evaluations, for the notes on unscored and swapped readings."""
    notes: Sequence[str] = field(default_factory=tuple)
    """Further reasons appended to the decision (recorded judges that gave no score)."""


def batch_of(matrices: ScoreMatrices) -> ScoreBatch:
    """A live panel's matrices as a batch of one item."""
    # Coded by their place in STANDINGS, as a recorded table of a live run codes them, so
    # that kappa's sums run in the same order on both paths.
    standings = np.array(
        [[STANDINGS.index(s) for s in row] for row in matrices.standings], dtype=np.intp
    ).reshape(1, len(matrices.ids), len(matrices.judges))
    return ScoreBatch(
        judges=list(matrices.judges),
        ids=[list(matrices.ids)],
        is_pro=np.array([s == "PRO" for s in matrices.sides], dtype=bool),
        raw=matrices.raw[None],
        dimensions={d: m[None] for d, m in matrices.dimensions.items()},
        standings=standings,
        spread=None
        if matrices.spread is None
        else (matrices.spread[0][None], matrices.spread[1][None]),
    )


@dataclass(frozen=True)
class _Numbers:
    """Every statistic of a batch, as lists per item (None where undefined)."""

    alpha: list[float | None]
    alpha_raw: list[float | None]
    alpha_by_dimension: dict[str, list[float | None]]
    kappa: list[float | None]
    variance: list[list[float | None]]
    without: list[list[float | None]]
    no_difference: list[bool]
    sides: list[list[float | None]]
    """Per item: pro, con, margin, pro_points, con_points, margin_points."""
    intervals: list[list[float | None]]
    """Per item: the calibrated interval's ends, then those in points, widened by the
    design effect of correlated judges."""
    correlation: list[Any]
    """Per item and judge: its correlation with each other judge, in order (None where
    undefined); None for an item of fewer than two judges."""
    correlation_undefined: bool
    """Every correlation of the batch is undefined (too few units): no per-item matrix read."""
    effective: list[float | None]
    effective_ci: list[tuple[float, float] | None]
    clusters: list[list[list[str]]]
    scale: list[float | None]
    """Per item: the factor the intervals' half-widths were widened by."""
    split: list[dict[str, float] | None]
    """Per item: the weights the vote used where a cluster split them, else None."""


def _agreement_numbers(batch: ScoreBatch, calibrated: FloatArray) -> dict[str, object]:
    items, judges = batch.raw.shape[:2]
    enough = judges >= 2
    undefined: list[float | None] = [None] * items
    kappa = undefined
    if enough and batch.standings is not None:
        kappa = _nums(fleiss_kappa_batch(batch.standings))
    variance, without = _nums_each(
        argument_variance_batch(offset_corrected_batch(batch.raw)),
        leave_one_out_alpha_batch(calibrated),
    )
    names = list(batch.dimensions)
    alphas = (
        _nums_each(*interval_alphas([calibrated, batch.raw, *batch.dimensions.values()]))
        if enough
        else [undefined] * (2 + len(names))
    )
    return {
        "alpha": alphas[0],
        "alpha_raw": alphas[1],
        "alpha_by_dimension": dict(zip(names, alphas[2:], strict=True)),
        "kappa": kappa,
        "variance": variance,
        "without": without,
        "no_difference": (
            (batch.raw == batch.raw[:, :, :1]).all(axis=(1, 2)).tolist()
            if batch.raw[0].size
            else [False] * items
        ),
    }


def _interval_ends(interval: FloatArray) -> FloatArray:
    """Interval ends rounded to 9 decimals, far below any real effect.

    Floating-point noise must not move a bound that is exactly 0 across it (which would
    turn "includes 0" into "excludes 0").
    """
    return np.round(interval, 9) + 0.0


def _vote_numbers(
    batch: ScoreBatch,
    calibrated: FloatArray,
    weights: FloatArray,
    setting: Setting,
    effect: FloatArray,
) -> dict[str, object]:
    items, judges = batch.raw.shape[:2]
    if judges == 0:
        return {
            "sides": [[None] * 6] * items,
            "intervals": [[None] * 4] * items,
            "scale": [None] * items,
        }
    scaled, points = side_votes(batch, calibrated, weights, setting)
    sides = np.stack([*scaled, *points], axis=1)
    correlated = bool((effect > 1.0).any())  # the judges' share of the width grows
    found, held = margin_intervals(
        (calibrated, batch.raw), batch, weights, setting, held=correlated
    )
    scale = np.ones(items)
    if held is not None:
        found[0], scale = widened(found[0], scaled.margin, held[0], effect)
        found[1], _ = widened(found[1], points.margin, held[1], effect)
    if batch.spread is not None:  # repeated readings: add each judge's own spread
        found = widen_for_readings(
            found, (scaled.margin, points.margin), calibrated, batch, weights, setting
        )
    intervals = np.concatenate(found, axis=1)
    sides_, ends, scales = _nums_each(sides, _interval_ends(intervals), scale)
    return {"sides": sides_, "intervals": ends, "scale": scales}


def _correlation_numbers(
    batch: ScoreBatch, setting: Setting
) -> tuple[dict[str, object], tuple[FloatArray, list[list[list[int]]]] | None]:
    """Per item: the judges' correlation over the units, votes, clusters, design effect.

    The effective votes, the clusters of judges that move together, and the design effect
    the margin's interval is widened by (:mod:`debate.stats._effective`).
    """
    items, judges = batch.raw.shape[:2]
    if judges < 2:
        none: list[Any] = [None] * items
        return {
            "correlation": none,
            "correlation_undefined": True,
            "effective": none,
            "effective_ci": none,
            "clusters": [[] for _ in range(items)],
        }, None
    corr = correlation_batch(batch.raw, batch.is_pro)
    groups = cluster_batch(corr)
    found = effective_votes(corr)
    if items <= EXACT_INTERVAL_ITEMS:  # each item drawn from its own seed, if it has one
        level = setting.thresholds.confidence
        ci = effective_votes_intervals(
            batch.raw, batch.is_pro, ci=level, seed=setting.seed, seeds=batch.seeds
        )
    else:
        ci = [None] * items  # a bootstrap per item: kept for small batches
    off = _off_diagonal(corr)
    undefined = bool(np.isnan(off).all())  # too few units: no per-item matrix to read
    return {
        "correlation": [()] * items if undefined else _nums(off),
        "correlation_undefined": undefined,
        "effective": _nums(found),
        "effective_ci": ci,
        "clusters": [[[batch.judges[j] for j in g] for g in found] for found in groups],
    }, (corr, groups)


def _off_diagonal(corr: FloatArray) -> FloatArray:
    """Items x judges x (judges - 1): each judge's correlations with the others, in order."""
    judges = corr.shape[1]
    others = ~np.eye(judges, dtype=bool)
    out: FloatArray = corr[:, others].reshape(corr.shape[0], judges, judges - 1)
    return out


def _numbers(batch: ScoreBatch, weights: FloatArray, setting: Setting) -> _Numbers:
    """Every statistic of the batch.

    The vote weighs each judge of a cluster (correlation >= 0.9) by its weight over the
    cluster's size, and its interval is widened by the design effect of the correlations,
    so copies of a judge count as that judge once (:mod:`debate.stats._effective`).
    """
    calibrated = calibrate_batch(batch.raw, setting.calibration, setting.thresholds.min_spread)
    correlation, found = _correlation_numbers(batch, setting)
    items, judges = batch.raw.shape[:2]
    used = np.array(np.broadcast_to(weights, (items, judges)))
    effect = np.ones(items)
    if found is not None:
        corr, groups = found
        used = split_weights(corr, weights, groups)
        effect = design_effect(corr, used)
    return _Numbers(
        **_agreement_numbers(batch, calibrated),  # type: ignore[arg-type]
        **_vote_numbers(batch, calibrated, used, setting, effect),  # type: ignore[arg-type]
        **correlation,  # type: ignore[arg-type]
        split=[
            None if same else dict(zip(batch.judges, row, strict=True))
            for same, row in zip((used == weights).all(axis=1).tolist(), used.tolist(), strict=True)
        ],
    )


def _pair(values: list[float | None], at: int) -> tuple[float, float] | None:
    low, high = values[at], values[at + 1]
    return None if low is None or high is None else (low, high)


def _records(
    numbers: _Numbers, b: int, batch: ScoreBatch, unscored: int
) -> tuple[Agreement, Diagnostics, Margins]:
    """One item's agreement and diagnostics, built without validation, and its vote numbers.

    Safe (:func:`~debate.records.built`) because every value is already of its field's type:
    the numbers are Python floats, None and bools from :func:`_nums` and ``tolist``, and the
    names are the batch's strings. Validating them again item by item cost a fifth of
    ``debate decide``.
    """
    ids = batch.ids[b]
    by_dimension = {d: v[b] for d, v in numbers.alpha_by_dimension.items()}
    variance = dict(zip(ids, numbers.variance[b], strict=True))
    correlation = _correlation_fields(numbers, b, batch)
    agreement = built(
        Agreement,
        alpha=numbers.alpha[b],
        alpha_raw=numbers.alpha_raw[b],
        alpha_by_dimension=by_dimension,
        kappa=numbers.kappa[b],
        argument_variance=variance,
        judges_scored=len(batch.judges),
        judges_unscored=unscored,
        **correlation,
        warning=few_votes(
            correlation.get("effective_votes"), len(batch.judges), correlation.get("clusters")
        ),
    )
    pro, con, margin, pro_points, con_points, margin_points = numbers.sides[b]
    intervals = numbers.intervals[b]
    defined = margin is not None
    margins = Margins(
        pro,
        con,
        margin,
        _pair(intervals, 0) if defined else None,
        pro_points,
        con_points,
        margin_points,
        _pair(intervals, 2) if defined else None,
        numbers.split[b],
    )
    diagnostics = built(
        Diagnostics,
        alpha_without_judge=dict(zip(batch.judges, numbers.without[b], strict=True)),
        alpha_by_dimension=dict(by_dimension),
        argument_variance=dict(variance),
        no_difference=numbers.no_difference[b],
    )
    return agreement, diagnostics, margins


def _correlation_fields(numbers: _Numbers, b: int, batch: ScoreBatch) -> dict[str, Any]:
    """One item's correlation (judge by judge), effective votes and clusters, as fields."""
    matrix = numbers.correlation[b]
    if matrix is None:
        return {}
    ci = numbers.effective_ci[b]
    return {
        "correlation": {j: row.copy() for j, row in batch.no_correlation.items()}
        if numbers.correlation_undefined
        else {
            j: dict(zip(others, row, strict=True))
            for j, others, row in zip(batch.judges, batch.others, matrix, strict=True)
        },
        "effective_votes": numbers.effective[b],
        "effective_votes_ci": None if ci is None else (float(ci[0]), float(ci[1])),
        "effective_votes_method": ESTIMATOR,
        "clusters": numbers.clusters[b],
        "ci_widening": numbers.scale[b],
    }


class Ruled(NamedTuple):
    """One item's agreement, diagnostics, vote numbers, ruling and lead: no Vote or Decision."""

    agreement: Agreement
    diagnostics: Diagnostics
    margins: Margins
    ruling: Ruling
    lead: dict[str, object]
    """The decision's lead, evidence, ``p_agree`` and judge evidence (empty: no judge)."""


def rule_batch(
    batch: ScoreBatch,
    judge_weights: Mapping[str, float],
    setting: Setting,
    contexts: Sequence[Context],
    *,
    judge_evidence: bool = True,
) -> list[Ruled]:
    """Every item of ``batch`` decided, as the parts a record of it is made from.

    What :func:`debate.panel._conclude.conclude_batch` makes a live panel's records from;
    recorded tables keep only an item decision per item, so they take these parts rather
    than a Vote and a Decision each, and no per-judge evidence (``judge_evidence`` False).
    A large batch is ruled in blocks, the next block's statistics computed meanwhile
    (:mod:`debate.panel._ahead`): the same records as in one piece.
    """
    if len(contexts) != batch.size:
        raise ValueError(f"contexts: give one per item ({batch.size}), not {len(contexts)}")
    weights = np.array([judge_weights[j] for j in batch.judges], dtype=np.float64)
    weightless = []
    if batch.judges and not weights.sum() > 0:
        weightless.append(
            "no judge that scored carries a positive weight, so there is no weighted vote; "
            "give at least one of " + ", ".join(batch.judges) + " a weight above 0"
        )
    found_leads = leads(batch, weights, judge_evidence)
    thresholds, level = setting.thresholds, setting.thresholds.confidence
    out: list[Ruled] = []

    def rule(block: slice, items: ScoreBatch, numbers: _Numbers) -> None:
        for b, context in enumerate(contexts[block]):
            agreement, diagnostics, margins = _records(numbers, b, items, context.unscored)
            notes = [*judge_notes(context.evaluations), *context.notes, *weightless]
            found = ruling(
                agreement, margins, level, thresholds, context.panel_size, diagnostics, notes
            )
            out.append(Ruled(agreement, diagnostics, margins, found, found_leads[block.start + b]))

    each_block(batch, lambda items: _numbers(items, weights, setting), rule)
    return out
