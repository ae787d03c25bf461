"""The validity metrics: a cross-fitted :class:`DecisionFrame` turned into a report.

For every panel and every single judge: accuracy against people's majority, coverage and
declared accuracy; for score data Spearman, Kendall and pairwise accuracy against people's
mean; the risk-coverage curves of the gated panels and of the best single judge, and the two
compared at equal coverage; how well the panel's splits pick out people's. Every figure has
an item-bootstrap interval (:mod:`debate.judgments._resample`). The figures are computed in
:mod:`~debate.judgments._figures` and :mod:`~debate.judgments._coverage`; this module checks
the frame, gathers them into the report and writes its notes.
"""

from __future__ import annotations

import math
from typing import Any

from numpy.typing import NDArray

from debate.exceptions import ConfigurationError
from debate.judgments._correlation import error_correlation
from debate.judgments._coverage import Basis, by_p_agree, equal_coverage, risk_coverage
from debate.judgments._figures import calibration, method_row, score_figures, split_detection
from debate.judgments._resample import KENDALL_ITEMS, KENDALL_REPLICATES, ItemBootstrap
from debate.records import (
    NO_CALL,
    AgreementComparison,
    Calls,
    DecisionFrame,
    EqualCoverage,
    MethodKind,
    MethodRow,
    Policy,
    ValidityReport,
)
from debate.stats import band

BEST_JUDGE_RULE = (
    "the single judge with the highest accuracy against people over all labelled units: an "
    "oracle choice made with the labels it is scored on, which favours the single judge"
)


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
    report: dict[str, Any] = {
        **_counts(frame, source, folds, seed, n_boot),
        "methods": rows,
        "best_judge": best,
        "best_judge_rule": BEST_JUDGE_RULE,
        **_gated_figures(frame, best, boot, n_boot, seed),
        "agreement": AgreementComparison(
            alpha_judges=_finite(alpha_judges),
            alpha_people=_finite(alpha_people),
            level=alpha_level,
        ),
        "weights": {k: [dict(w) for w in v] for k, v in frame.weights_by_fold.items()},
        "policy": policy,
        "judge_correlation": error_correlation(frame, n_boot=n_boot, seed=seed),
    }
    report["notes"] = _notes(frame, report, rows, report["equal_coverage"])
    return ValidityReport(**report)


def _counts(
    frame: DecisionFrame, source: str, folds: int, seed: int, n_boot: int
) -> dict[str, Any]:
    """What was measured and how: the source, the kind, the units and the resampling."""
    return {
        "source": source,
        "kind": "verdicts" if frame.option_scores is None else "scores",
        "dimension": frame.dimension,
        "units": int(frame.group.size),
        "labelled": int((frame.label != NO_CALL).sum()),
        "items": len(frame.items),
        "folds": folds,
        "seed": seed,
        "bootstrap": n_boot,
    }


def _gated_figures(
    frame: DecisionFrame, best: str | None, boot: ItemBootstrap, n_boot: int, seed: int
) -> dict[str, Any]:
    """The figures only a gated panel has: its curves, its splits, its calibration.

    Each gated panel is also held against the best single judge at equal coverage, by the
    gate, by the judge's coverage and at a fixed share (the last two rank the panel's leads
    by ``p_agree``, so they need a lead).
    """
    gated = {name: calls for name, calls in frame.methods.items() if calls.outcome is not None}
    curves = [
        risk_coverage(name, "panel", by_p_agree(calls), frame.label)
        for name, calls in gated.items()
    ]
    curves += [risk_coverage(n, "judge", c, frame.label) for n, c in frame.judges.items()]
    comparisons: list[EqualCoverage] = []
    if best is not None:
        bases: tuple[Basis, ...] = ("gate", "judge", "fixed")
        comparisons = [
            equal_coverage(name, calls, best, frame.judges[best], frame, boot, basis)
            for basis in bases
            for name, calls in gated.items()
            if basis == "gate" or calls.lead is not None
        ]
    return {
        "risk_coverage": curves,
        "equal_coverage": comparisons,
        "split_detection": [split_detection(n, c, frame, boot) for n, c in gated.items()],
        "calibration": [
            calibration(name, calls, frame, n_boot, seed)
            for name, calls in gated.items()
            if calls.lead is not None
        ],
    }
