"""The validity metrics: a cross-fitted :class:`DecisionFrame` turned into a report.

For every panel and every single judge: accuracy against people's majority, coverage and
declared accuracy; for score data Spearman, Kendall and pairwise accuracy against people's
mean; the risk-coverage curves of the gated panels and of the best single judge, and the two
compared at equal coverage; how well the panel's splits pick out people's. Every figure has
an item-bootstrap interval (:mod:`debate.judgments._resample`). Also the tidy per-unit table
(:func:`frame_rows`, :func:`write_frame_csv`, :func:`frame_dataframe`).
"""

from __future__ import annotations

import csv
import importlib
import math
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from debate.exceptions import ConfigurationError
from debate.judgments._arrays import BoolArray, FloatArray, Index, IntArray
from debate.judgments._correlation import error_correlation
from debate.judgments._resample import (
    KENDALL_ITEMS,
    KENDALL_REPLICATES,
    ItemBootstrap,
    estimate,
    rank_correlations,
    ratio,
    undefined,
)
from debate.records import (
    NO_CALL,
    OUTCOMES,
    VERDICTS,
    AgreementComparison,
    Calibration,
    Calls,
    DecisionFrame,
    EqualCoverage,
    Estimate,
    MethodKind,
    MethodRow,
    Policy,
    RiskCoverage,
    RiskPoint,
    SplitDetection,
    ValidityReport,
)
from debate.stats import band, expected_calibration_error, reliability_bins

SHARES = tuple(k / 10 for k in range(1, 11))
"""The risk-coverage points: the most confident 10 %, 20 %, ... 100 % of declared calls."""
FLAGGED = (OUTCOMES.index("too_close"), OUTCOMES.index("irreconcilable"))
"""Outcomes that say "the judges do not settle this": what split detection scores."""
BEST_JUDGE_RULE = (
    "the single judge with the highest accuracy against people over all labelled units: an "
    "oracle choice made with the labels it is scored on, which favours the single judge"
)
PANDAS_MISSING = 'frame_dataframe needs pandas: pip install -e ".[pandas]"'
CSV_COLUMNS = (
    "item",
    "option_a",
    "option_b",
    "fold",
    "label",
    "people_split",
    "method",
    "kind",
    "call",
    "declared",
    "confidence",
    "outcome",
    "correct",
)
"""The tidy per-unit, per-method columns of :func:`write_frame_csv` and
:func:`frame_dataframe`."""


# --- accuracy, coverage, declared accuracy --------------------------------------------------


@dataclass(frozen=True)
class Graded:
    """A method's calls held against people's labels, per unit."""

    labelled: BoolArray
    answered: BoolArray
    """Labelled and the method made a call (an unscored judge's unit is left out)."""
    correct: BoolArray
    declared: BoolArray


def grade(calls: Calls, label: NDArray[np.int8]) -> Graded:
    """Which units are labelled, answered, right and declared."""
    labelled = label != NO_CALL
    answered = labelled & (calls.call != NO_CALL)
    return Graded(
        labelled=labelled,
        answered=answered,
        correct=answered & (calls.call == label),
        declared=answered & calls.declared,
    )


def method_row(
    name: str, kind: MethodKind, calls: Calls, frame: DecisionFrame, boot: ItemBootstrap
) -> MethodRow:
    """Accuracy, coverage and declared accuracy of one method, with intervals."""
    g = grade(calls, frame.label)
    point, reps = boot.totals(
        frame.group, g.answered, g.correct, g.labelled, g.declared, g.correct & g.declared
    )

    def part(num: int, den: int, of: str) -> Estimate:
        return ratio(point[num], point[den], reps[:, num], reps[:, den], of)

    return MethodRow(
        name=name,
        kind=kind,
        gated=calls.outcome is not None,
        accuracy=part(1, 0, "labelled unit with a call"),
        coverage=part(3, 2, "labelled unit"),
        declared_accuracy=part(4, 3, "declared call on a labelled unit"),
    )


# --- score data: rank correlations and pairwise accuracy -----------------------------------


def option_pairs(group: Index, people: FloatArray) -> tuple[IntArray, IntArray]:
    """Every pair of options of one item whose people's means differ (rows ``a``, ``b``)."""
    order = np.argsort(group, kind="stable")
    ordered = group[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    sizes = np.diff(np.r_[starts, ordered.size])
    firsts, seconds = [np.empty(0, np.intp)], [np.empty(0, np.intp)]
    for size in np.unique(sizes[sizes >= 2]):  # one pass per distinct group size, not per item
        base = starts[sizes == size][:, None]
        i, j = np.triu_indices(int(size), 1)
        firsts.append(order[(base + i).ravel()])
        seconds.append(order[(base + j).ravel()])
    a, b = np.concatenate(firsts), np.concatenate(seconds)
    diff = people[a] - people[b]
    keep = np.isfinite(diff) & (diff != 0)
    return a[keep], b[keep]


def pairwise_accuracy(
    values: FloatArray,
    people: FloatArray,
    group: Index,
    pairs: tuple[IntArray, IntArray],
    boot: ItemBootstrap,
) -> Estimate:
    """Share of people-ordered option pairs the method's scores order the same way."""
    a, b = pairs
    mine = values[a] - values[b]
    scored = np.isfinite(mine)
    agree = scored & (np.sign(mine) == np.sign(people[a] - people[b]))
    return boot.ratio(group[a], agree, scored, "pair of options that people order and it scored")


def score_figures(frame: DecisionFrame, boot: ItemBootstrap) -> dict[str, dict[str, Estimate]]:
    """Spearman, Kendall and pairwise accuracy of every method's and judge's option scores."""
    scores = frame.option_scores
    assert scores is not None
    values = {**scores.methods, **scores.judges}
    pairs = option_pairs(scores.group, scores.people)
    correlations = rank_correlations(values, scores.people, scores.group, boot)
    return {
        name: {
            "spearman": correlations[name][0],
            "kendall": correlations[name][1],
            "pairwise_accuracy": pairwise_accuracy(x, scores.people, scores.group, pairs, boot),
        }
        for name, x in values.items()
    }


# --- risk-coverage and the comparison at equal coverage ------------------------------------


@dataclass(frozen=True)
class Ranked:
    """A method's declared calls on labelled units, most confident first."""

    units: IntArray
    correct: FloatArray
    ends: IntArray
    """Number of calls up to the end of each run of equal confidence."""
    labelled: int

    @property
    def declared(self) -> int:
        return int(self.units.size)


def rank_declared(calls: Calls, label: NDArray[np.int8]) -> Ranked:
    """Sort declared calls by confidence, descending (stable), and mark the runs of ties."""
    g = grade(calls, label)
    chosen = np.flatnonzero(g.declared)
    units = chosen[np.argsort(-calls.confidence[chosen], kind="stable")]
    confidence = calls.confidence[units]
    ends = np.r_[np.flatnonzero(confidence[1:] != confidence[:-1]) + 1, units.size]
    return Ranked(
        units=units,
        correct=g.correct[units].astype(float),
        ends=ends.astype(np.intp) if units.size else np.empty(0, np.intp),
        labelled=int(g.labelled.sum()),
    )


def top_weights(ranked: Ranked, k: int) -> FloatArray:
    """Each ranked call's weight in the most confident ``k``.

    A run of equal confidence that the cut splits counts each of its calls at the fraction
    kept, so which tied call comes first never changes a figure: a judge without confidence
    gradation scores its accuracy over all its declared calls at every cut.
    """
    weights = np.zeros(ranked.declared)
    if k <= 0:
        return weights
    run = int(np.searchsorted(ranked.ends, k))
    start = 0 if run == 0 else int(ranked.ends[run - 1])
    end = int(ranked.ends[run])
    weights[:start] = 1.0
    weights[start:end] = (k - start) / (end - start)
    return weights


def top_accuracy(ranked: Ranked, k: int) -> float:
    """Accuracy of the most confident ``k`` declared calls (ties shared, see above)."""
    return float(top_weights(ranked, k) @ ranked.correct / k)


def risk_coverage(
    name: str, kind: MethodKind, calls: Calls, label: NDArray[np.int8]
) -> RiskCoverage:
    """The points at 10 % steps of declared calls, and the full step curve."""
    ranked = rank_declared(calls, label)
    labelled = max(1, ranked.labelled)
    points = []
    for share in SHARES if ranked.declared else ():
        k = max(1, math.ceil(share * ranked.declared - 1e-9))
        points.append(
            RiskPoint(share=share, coverage=k / labelled, accuracy=top_accuracy(ranked, k), n=k)
        )
    cumulative = np.cumsum(ranked.correct)
    curve = [
        RiskPoint(
            share=int(end) / ranked.declared,
            coverage=int(end) / labelled,
            accuracy=float(cumulative[end - 1] / end),
            n=int(end),
        )
        for end in ranked.ends
    ]
    return RiskCoverage(
        method=name,
        kind=kind,
        labelled=ranked.labelled,
        declared=ranked.declared,
        graded=ranked.ends.size > 1,
        points=points,
        curve=curve,
    )


def _judge_cut(panel: Ranked, judge: Ranked, name: str) -> tuple[int, str | None]:
    """How many of the judge's calls match the panel's coverage, and what limits it."""
    k = round(panel.declared / panel.labelled * judge.labelled)
    if k > judge.declared:
        share = judge.declared / max(1, judge.labelled)
        return judge.declared, (
            f"{name} declares on only {share:.0%} of labelled units, less than the panel: "
            "its figure is over all its declared calls"
        )
    if judge.ends.size == 1:
        return k, (
            f"{name} gives no confidence gradation: its accuracy at equal coverage is its "
            "accuracy over all its declared calls"
        )
    return k, None


def by_p_agree(calls: Calls) -> Calls:
    """A panel's lead on every unit, most ``p_agree`` first: its curve runs to 100 %.

    A unit without a lead (even evidence) counts as a tie call, least confident.
    """
    if calls.lead is None or calls.p_agree is None:
        return calls
    lead = np.where(calls.lead == NO_CALL, 2, calls.lead).astype(np.int8)
    return Calls(call=lead, declared=np.ones(lead.size, dtype=np.bool_), confidence=calls.p_agree)


def equal_coverage(
    panel_name: str,
    panel_calls: Calls,
    judge_name: str,
    judge_calls: Calls,
    frame: DecisionFrame,
    boot: ItemBootstrap,
    basis: Literal["gate", "judge", "fixed"] = "gate",
    share: float = 0.8,
) -> EqualCoverage:
    """A panel's accuracy against the best judge's at one coverage, on the same units.

    ``gate``: the gated panel's declared verdicts against the judge's most confident calls,
    as many; ``judge``: every call the judge declares against the panel's most confident
    leads (by ``p_agree``), as many; ``fixed``: both sides' most confident ``share`` of the
    labelled units. The coverage is fixed at its point estimate, so the interval leaves
    out the coverage's own uncertainty.
    """
    gated = basis == "gate"
    panel = rank_declared(panel_calls if gated else by_p_agree(panel_calls), frame.label)
    judge = rank_declared(judge_calls, frame.label)
    if panel.declared == 0:
        none = undefined(0, "the panel declares no verdict on a labelled unit")
        return EqualCoverage(
            panel=panel_name,
            judge=judge_name,
            coverage=None,
            panel_accuracy=none,
            judge_accuracy=none,
            difference=none,
            basis=basis,
        )
    labelled = max(1, panel.labelled)
    if basis == "gate":
        k_panel = panel.declared
        k_judge, note = _judge_cut(panel, judge, judge_name)
    elif basis == "judge":
        k_judge, note = judge.declared, None
        k_panel = min(panel.declared, round(judge.declared / max(1, judge.labelled) * labelled))
    else:
        k_panel = min(panel.declared, round(share * labelled))
        k_judge, note = _judge_cut_at(judge, k_panel, judge_name)
    columns = np.zeros((4, frame.group.size))
    mine_w = top_weights(panel, k_panel)
    columns[0, panel.units] = mine_w * panel.correct
    columns[1, panel.units] = mine_w
    weights = top_weights(judge, k_judge)
    columns[2, judge.units] = weights * judge.correct
    columns[3, judge.units] = weights
    point, reps = boot.totals(frame.group, *columns)
    mine = ratio(point[0], point[1], reps[:, 0], reps[:, 1], "declared call")
    theirs = ratio(point[2], point[3], reps[:, 2], reps[:, 3], "declared call of the judge")
    if mine.value is None or theirs.value is None:
        difference = undefined(0, "one side has no declared call")
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            diff = reps[:, 0] / reps[:, 1] - reps[:, 2] / reps[:, 3]
        difference = estimate(mine.value - theirs.value, diff, mine.n)
    return EqualCoverage(
        panel=panel_name,
        judge=judge_name,
        coverage=k_panel / labelled,
        panel_accuracy=mine,
        judge_accuracy=theirs,
        difference=difference,
        basis=basis,
        note=note,
    )


def _judge_cut_at(judge: Ranked, k: int, name: str) -> tuple[int, str | None]:
    """The judge's most confident ``k`` calls, or all it declares when it declares fewer."""
    if k > judge.declared:
        share = judge.declared / max(1, judge.labelled)
        return judge.declared, (
            f"{name} declares on only {share:.0%} of labelled units: its figure is over all "
            "its declared calls"
        )
    return k, None


# --- calibration of p_agree -----------------------------------------------------------------


def calibration(
    name: str, calls: Calls, frame: DecisionFrame, n_boot: int, seed: int
) -> Calibration:
    """The reliability diagram and the expected calibration error of a panel's ``p_agree``."""
    assert calls.lead is not None and calls.p_agree is not None
    usable = (frame.label != NO_CALL) & (calls.lead != NO_CALL)
    p = calls.p_agree[usable]
    right = calls.lead[usable] == frame.label[usable]
    ece = expected_calibration_error(p, right, groups=frame.group[usable], n_boot=n_boot, seed=seed)
    n = int(usable.sum())
    if n == 0:
        value = undefined(0, "no labelled unit with a lead")
    else:
        value = Estimate(
            value=ece.estimate,
            low=None if math.isnan(ece.low) else ece.low,
            high=None if math.isnan(ece.high) else ece.high,
            n=n,
        )
    return Calibration(
        method=name,
        calibrated=calls.calibrated,
        units=n,
        ece=value,
        bins=reliability_bins(p, right),
    )


# --- split detection ------------------------------------------------------------------------


def split_detection(
    name: str, calls: Calls, frame: DecisionFrame, boot: ItemBootstrap
) -> SplitDetection:
    """How well ``too_close``/``irreconcilable`` picks out the units people disagreed on.

    Precision, recall and lift over the base rate, over every unit (labelled or not).
    """
    assert calls.outcome is not None
    flagged = np.isin(calls.outcome, FLAGGED)
    split = frame.people_split
    point, reps = boot.totals(frame.group, flagged & split, flagged, split, np.ones(split.size))
    precision = ratio(point[0], point[1], reps[:, 0], reps[:, 1], "unit flagged")
    base = ratio(point[2], point[3], reps[:, 2], reps[:, 3], "unit")
    if precision.value is None or not base.value:
        lift = undefined(precision.n, "no flagged unit or no unit people split on")
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            lifts = (reps[:, 0] / reps[:, 1]) / (reps[:, 2] / reps[:, 3])
        lift = estimate(precision.value / base.value, lifts, precision.n)
    return SplitDetection(
        method=name,
        units=int(split.size),
        flagged=int(flagged.sum()),
        people_split=int(split.sum()),
        precision=precision,
        recall=ratio(point[0], point[2], reps[:, 0], reps[:, 2], "unit people split on"),
        base_rate=base,
        lift=lift,
    )


# --- the report -----------------------------------------------------------------------------


def check_frame(frame: DecisionFrame, n_boot: int, folds: int) -> None:
    """One-line errors for a frame whose arrays disagree, before any statistic."""
    if n_boot < 2:
        raise ConfigurationError(
            f"n_boot: {n_boot}; give at least 2 (1000 is usual)", field="n_boot"
        )
    if folds < 1:
        raise ConfigurationError(f"folds: {folds}; give at least 1", field="folds")
    units = frame.group.size
    arrays: dict[str, NDArray[Any]] = {
        "fold": frame.fold,
        "label": frame.label,
        "people_split": frame.people_split,
    }
    for kind, table in (("methods", frame.methods), ("judges", frame.judges)):
        for name, calls in table.items():
            for part in ("call", "declared", "confidence"):
                arrays[f"{kind}[{name!r}].{part}"] = getattr(calls, part)
            if calls.outcome is not None:
                arrays[f"{kind}[{name!r}].outcome"] = calls.outcome
    for where, array in arrays.items():
        if array.shape != (units,):
            raise ConfigurationError(
                f"frame.{where}: {array.shape[0]} entries for {units} units; give one per unit",
                field=where,
            )
    if units and (frame.group.min() < 0 or frame.group.max() >= len(frame.items)):
        raise ConfigurationError(
            f"frame.group: item index out of 0..{len(frame.items) - 1}; index frame.items",
            field="group",
        )
    _check_scores(frame)
    if frame.options and len(frame.options) != units:
        raise ConfigurationError(
            f"frame.options: {len(frame.options)} pairs for {units} units; give one per unit",
            field="options",
        )


def _check_scores(frame: DecisionFrame) -> None:
    scores = frame.option_scores
    if scores is None:
        return
    rows = scores.group.size
    named = {"people": scores.people}
    named |= {f"methods[{k!r}]": v for k, v in scores.methods.items()}
    named |= {f"judges[{k!r}]": v for k, v in scores.judges.items()}
    for where, array in named.items():
        if array.shape != (rows,):
            raise ConfigurationError(
                f"frame.option_scores.{where}: {array.shape[0]} scores for {rows} options; "
                "give one per option row (NaN where unscored)",
                field=f"option_scores.{where}",
            )


def _rows(frame: DecisionFrame, boot: ItemBootstrap) -> list[MethodRow]:
    """Every panel, then every single judge, with the score figures when there are scores."""
    named: list[tuple[str, MethodKind, Calls]] = [
        *((name, "panel", calls) for name, calls in frame.methods.items()),
        *((name, "judge", calls) for name, calls in frame.judges.items()),
    ]
    rows = [method_row(name, kind, calls, frame, boot) for name, kind, calls in named]
    if frame.option_scores is None:
        return rows
    figures = score_figures(frame, boot)
    return [row.model_copy(update=figures.get(row.name, {})) for row in rows]


def best_judge(rows: list[MethodRow]) -> str | None:
    """The single judge with the highest accuracy (the first of equals, in frame order)."""
    scored = [r for r in rows if r.kind == "judge" and r.accuracy.value is not None]
    if not scored:
        return None
    return max(scored, key=lambda r: r.accuracy.value or 0.0).name


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _agreement_notes(agreement: AgreementComparison) -> list[str]:
    people, judges = agreement.alpha_people, agreement.alpha_judges
    if people is None:
        return ["alpha among people is undefined or not given: how far people agree is unknown"]
    notes = []
    if band(people) in ("unacceptable", "low"):
        notes.append(
            f"people agree weakly here (alpha {people:.2f}): their majority is a noisy "
            "reference, and no method can be measured as far above it as it may be"
        )
    if judges is not None and judges > people:
        notes.append(
            f"the judges agree with each other (alpha {judges:.2f}) more than people do "
            f"({people:.2f}): agreement among judges is not correctness"
        )
    return notes


def _undefined_notes(rows: list[MethodRow]) -> list[str]:
    notes = []
    for row in rows:
        for field in ("accuracy", "coverage", "declared_accuracy", "spearman", "kendall"):
            figure = getattr(row, field)
            if figure is not None and figure.value is None:
                notes.append(f"{row.name}: {field.replace('_', ' ')} undefined ({figure.note})")
    return notes


def _zero_weight_notes(frame: DecisionFrame) -> list[str]:
    """Judges that people's labels weigh 0 in every fold: the equal-weight panel's blind spot."""
    folds = frame.weights_by_fold.get("labels") or []
    if not folds:
        return []
    zero = [j for j in folds[0] if all(w.get(j, 0.0) == 0.0 for w in folds)]
    if not zero or len(zero) == len(folds[0]):
        return []
    return [
        f"judges {', '.join(zero)} earn weight 0 against people in every fold (at or below "
        "chance: fooled, or guessing); the equal-weight panel counts them fully, so compare "
        "it with the label-trained panel before trusting it"
    ]


def _kendall_note(replicates: int, items: int) -> str:
    used = min(replicates, KENDALL_REPLICATES)
    if items > KENDALL_ITEMS:
        return (
            f"Kendall's intervals are a sub-sampled bootstrap: {used} replicates of "
            f"{KENDALL_ITEMS} of the {items} items each, spread rescaled by "
            f"sqrt({KENDALL_ITEMS}/{items}) (a sort per replicate is the bottleneck)"
        )
    return f"Kendall's intervals use {used} of the {replicates} replicates (a sort each)"


def _notes(
    frame: DecisionFrame,
    report: dict[str, Any],
    rows: list[MethodRow],
    comparisons: list[EqualCoverage],
) -> list[str]:
    units, labelled = frame.group.size, report["labelled"]
    notes = [
        f"intervals are 95 % percentile bootstraps over items ({report['bootstrap']} "
        f"replicates, seed {report['seed']}): all units of an item are resampled together",
        f"every unit was decided with weights learned on the other folds ({report['folds']} "
        "folds by item), so no weight saw the label it is scored against"
        if report["folds"] > 1
        else "one fold: weights were learned on the very labels they are scored against, "
        "so the panels' figures are optimistic",
    ]
    if labelled < units:
        notes.append(
            f"{units - labelled} of {units} units have no majority among people and are left "
            "out of accuracy and coverage (split detection still counts them)"
        )
    if report["best_judge"] is not None:
        notes.append(f"the best single judge, {report['best_judge']}, is {BEST_JUDGE_RULE}")
    notes += [f"{c.panel} vs {c.judge}: {c.note}" for c in comparisons if c.note]
    notes.append(
        "risk-coverage: declared calls sorted by confidence; calls of equal confidence that a "
        "cut splits count at their run's mean accuracy, so the order of ties never matters"
    )
    if any(calls.outcome is not None for calls in frame.methods.values()):
        notes.append(
            "split detection counts too_close and irreconcilable as flags over every unit; "
            "insufficient (too few judges scored) is not a flag"
        )
    notes += _zero_weight_notes(frame)
    if frame.option_scores is not None:
        notes.append(_kendall_note(report["bootstrap"], report["items"]))
    return notes + _agreement_notes(report["agreement"]) + _undefined_notes(rows)


def validity_report(
    frame: DecisionFrame,
    *,
    alpha_judges: float | None,
    alpha_people: float | None,
    alpha_level: str,
    n_boot: int = 1000,
    seed: int = 0,
    source: str,
    folds: int,
    policy: Policy | None = None,
) -> ValidityReport:
    """Every panel and every single judge of a cross-fitted frame, against people.

    Args:
        frame: The decision units, each decided with weights learned on the other folds.
        alpha_judges: Krippendorff's alpha among the judges (None when undefined).
        alpha_people: Krippendorff's alpha among the people on the same items.
        alpha_level: The level both alphas were computed at.
        n_boot: Bootstrap replicates (items resampled with replacement).
        seed: Seed of the resampling.
        source: What was read (a file name), echoed in the report.
        folds: How many folds the frame was cross-fitted with.
        policy: The policy chosen for a target agreement, reported with its guarantee.

    Returns:
        The report; an undefined figure is None with a note, never 0 or 1.

    Raises:
        ConfigurationError: The frame's arrays disagree in length, or ``n_boot``/``folds``
            is too small.
    """
    check_frame(frame, n_boot, folds)
    boot = ItemBootstrap(len(frame.items), n_boot, seed)
    rows = _rows(frame, boot)
    best = best_judge(rows)
    gated = {name: calls for name, calls in frame.methods.items() if calls.outcome is not None}
    curves = [
        risk_coverage(name, "panel", by_p_agree(calls), frame.label)
        for name, calls in gated.items()
    ]
    curves += [risk_coverage(n, "judge", c, frame.label) for n, c in frame.judges.items()]
    comparisons: list[EqualCoverage] = []
    if best is not None:
        bases: tuple[Literal["gate", "judge", "fixed"], ...] = ("gate", "judge", "fixed")
        comparisons = [
            equal_coverage(name, calls, best, frame.judges[best], frame, boot, basis)
            for basis in bases
            for name, calls in gated.items()
            # the judge's and a fixed coverage rank the panel's leads by p_agree
            if basis == "gate" or calls.lead is not None
        ]
    report: dict[str, Any] = {
        "source": source,
        "kind": "verdicts" if frame.option_scores is None else "scores",
        "dimension": frame.dimension,
        "units": int(frame.group.size),
        "labelled": int((frame.label != NO_CALL).sum()),
        "items": len(frame.items),
        "folds": folds,
        "seed": seed,
        "bootstrap": n_boot,
        "methods": rows,
        "best_judge": best,
        "best_judge_rule": BEST_JUDGE_RULE,
        "risk_coverage": curves,
        "equal_coverage": comparisons,
        "split_detection": [split_detection(n, c, frame, boot) for n, c in gated.items()],
        "agreement": AgreementComparison(
            alpha_judges=_finite(alpha_judges),
            alpha_people=_finite(alpha_people),
            level=alpha_level,
        ),
        "weights": {k: [dict(w) for w in v] for k, v in frame.weights_by_fold.items()},
        "calibration": [
            calibration(name, calls, frame, n_boot, seed)
            for name, calls in gated.items()
            if calls.lead is not None
        ],
        "policy": policy,
        "judge_correlation": error_correlation(frame, n_boot=n_boot, seed=seed),
    }
    report["notes"] = _notes(frame, report, rows, comparisons)
    return ValidityReport(**report)


# --- the tidy per-unit table ----------------------------------------------------------------


def _named(frame: DecisionFrame) -> list[tuple[str, str, Calls]]:
    return [
        *((name, "panel", calls) for name, calls in frame.methods.items()),
        *((name, "judge", calls) for name, calls in frame.judges.items()),
    ]


def _verdict(code: int) -> str | None:
    return None if code == NO_CALL else VERDICTS[code]


def frame_rows(frame: DecisionFrame) -> Iterator[dict[str, Any]]:
    """The tidy rows of a frame: one per decision unit and method or judge (unit-major).

    Columns are :data:`CSV_COLUMNS`. ``label`` and ``call`` are ``A``/``B``/``tie`` or None
    (no majority among people; no call, an unscored judge); ``correct`` is None where
    either is missing; ``outcome`` is None for ungated methods; ``option_a``/``option_b``
    are None when the frame does not name them.
    """
    named = _named(frame)
    for u in range(frame.group.size):
        label = int(frame.label[u])
        a, b = frame.options[u] if frame.options else (None, None)
        shared = {
            "item": frame.items[int(frame.group[u])],
            "option_a": a,
            "option_b": b,
            "fold": int(frame.fold[u]),
            "label": _verdict(label),
            "people_split": bool(frame.people_split[u]),
        }
        for name, kind, calls in named:
            call = int(calls.call[u])
            confidence = float(calls.confidence[u])
            yield {
                **shared,
                "method": name,
                "kind": kind,
                "call": _verdict(call),
                "declared": bool(calls.declared[u]),
                "confidence": confidence if math.isfinite(confidence) else None,
                "outcome": None if calls.outcome is None else OUTCOMES[int(calls.outcome[u])],
                "correct": None if NO_CALL in (label, call) else call == label,
            }


def write_frame_csv(path: str | Path, frame: DecisionFrame) -> int:
    """Write :func:`frame_rows` as CSV (empty cell for None), atomically.

    Returns:
        The number of data rows written.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    count = 0
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
            writer.writeheader()
            for row in frame_rows(frame):
                writer.writerow(row)
                count += 1
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return count


def frame_dataframe(frame: DecisionFrame) -> Any:
    """The rows of :func:`frame_rows` as a pandas DataFrame, built column by column.

    Raises:
        ConfigurationError: pandas is not installed (it is the optional ``pandas`` extra).
    """
    try:
        pd = importlib.import_module("pandas")
    except ImportError as exc:
        raise ConfigurationError(PANDAS_MISSING) from exc
    named = _named(frame)
    m, n = len(named), frame.group.size

    def per_unit(values: NDArray[Any]) -> NDArray[Any]:
        return np.repeat(values, m)

    def per_method(parts: list[NDArray[Any]]) -> NDArray[Any]:
        return np.stack(parts, axis=1).ravel() if parts else np.empty(0)

    verdicts = np.array([*VERDICTS, None], dtype=object)  # index -1 is NO_CALL
    outcomes = np.array([*OUTCOMES, None], dtype=object)
    options = np.array(frame.options or [(None, None)] * n, dtype=object).reshape(n, 2)
    label = per_unit(frame.label.astype(np.intp))
    call = per_method([c.call.astype(np.intp) for _, _, c in named])
    missing = (label == NO_CALL) | (call == NO_CALL)
    correct = pd.array(np.where(missing, False, call == label), dtype="boolean")
    correct[missing] = pd.NA
    outcome = per_method(
        [np.full(n, -1) if c.outcome is None else c.outcome.astype(np.intp) for _, _, c in named]
    )
    columns = {
        "item": per_unit(np.array(frame.items, dtype=object)[frame.group]),
        "option_a": per_unit(options[:, 0]),
        "option_b": per_unit(options[:, 1]),
        "fold": per_unit(frame.fold),
        "label": verdicts[label],
        "people_split": per_unit(frame.people_split),
        "method": np.tile(np.array([x for x, _, _ in named], dtype=object), n),
        "kind": np.tile(np.array([k for _, k, _ in named], dtype=object), n),
        "call": verdicts[call],
        "declared": per_method([c.declared for _, _, c in named]),
        "confidence": per_method([c.confidence for _, _, c in named]),
        "outcome": outcomes[outcome],
        "correct": correct,
    }
    return pd.DataFrame(columns, columns=list(CSV_COLUMNS))
