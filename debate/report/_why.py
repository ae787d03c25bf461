"""Why the panel decided as it did, beyond the statistics: arguments, findings, causes.

The margin is a mean over arguments, so it splits exactly into one share per argument: a
PRO argument scored above the judge's midpoint between the sides pulls the margin toward
PRO, a CON argument scored above it pulls toward CON. The arguments with the largest pull
are the ones that decided the verdict; the judges' own key findings and, for a split, the
panel's diagnostics (which judge, which dimension, which arguments) say the rest. Nothing
here formats markup: model text is returned as data for the renderers to escape.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from debate.records import DebateResult
from debate.report._view import heatmap, per_result
from debate.stats import fmt

SHOWN = 3
"""How many deciding arguments the verdict names."""


@dataclass(frozen=True)
class Pull:
    """One argument's share of the margin."""

    argument: str
    side: str
    claim: str
    points: float
    """Weighted mean of the judges' raw 1-10 scores of this argument."""
    pull: float
    """Its share of the calibrated PRO - CON margin (positive: toward PRO)."""
    split: bool
    """The judges split on it (named by the decision)."""


@dataclass(frozen=True)
class _Panel:
    """The scored judges' matrices the vote was computed from, with normalised weights."""

    ids: list[str]
    sides: list[str]
    raw: NDArray[np.float64]
    calibrated: NDArray[np.float64]
    weights: NDArray[np.float64]


def _panel(result: DebateResult) -> _Panel | None:
    """Judges with a full row of finite calibrated scores and a vote weight, or ``None``.

    The weights are those the vote used (a cluster's members share its weight). ``None``
    under an aggregator other than the weighted mean: a median or a majority is not a sum
    of the arguments' shares.
    """
    if result.vote.aggregate != "weighted_mean":
        return None
    used = result.vote.cluster_weights or result.vote.judge_weights
    rows = [
        r
        for r in heatmap(result).rows
        if r.values is not None
        and all(math.isfinite(v) for v in r.values)
        and used.get(r.judge, 0.0) > 0
    ]
    if not rows:
        return None
    # a scored row's raw scores are its judge's row of the matrices (each row is one judge's)
    w = np.array([used[r.judge] for r in rows], dtype=np.float64)
    return _Panel(
        ids=list(result.transcript.argument_ids),
        sides=list(result.transcript.sides),
        raw=np.array([r.raw for r in rows], dtype=np.float64),
        calibrated=np.array([r.values for r in rows], dtype=np.float64),
        weights=w / w.sum(),
    )


@per_result
def pulls(result: DebateResult) -> list[Pull]:
    """Every argument's share of the margin, largest first; empty when no judge scored.

    Per judge, each PRO argument adds ``(score - midpoint) / n_PRO`` and each CON argument
    subtracts ``(score - midpoint) / n_CON``, the midpoint being the mean of the judge's two
    side means; weighted over judges these shares sum to the margin.
    """
    panel = _panel(result)
    if panel is None:
        return []
    pro = np.array([s == "PRO" for s in panel.sides])
    if not pro.any() or pro.all():
        return []
    x = panel.calibrated
    mid = (x[:, pro].mean(axis=1) + x[:, ~pro].mean(axis=1)) / 2
    share = np.where(pro, 1.0 / pro.sum(), -1.0 / (~pro).sum())
    per_argument = panel.weights @ ((x - mid[:, None]) * share)
    points = panel.weights @ panel.raw
    claims = {a.id: a.claim for a in result.transcript.arguments}
    split = set(result.decision.high_variance_arguments)
    found = [
        Pull(arg_id, side, claims.get(arg_id, ""), float(p), float(s), arg_id in split)
        for arg_id, side, p, s in zip(panel.ids, panel.sides, points, per_argument, strict=True)
    ]
    return sorted(found, key=lambda p: (-abs(p.pull), p.argument))


def deciding(result: DebateResult) -> list[Pull]:
    """The arguments that moved the margin most toward the leader (at most :data:`SHOWN`).

    With no leader (a zero or undefined margin) the largest pulls either way are shown.
    """
    margin = result.vote.margin
    found = pulls(result)
    if margin is None or margin == 0 or not math.isfinite(margin):
        return found[:SHOWN]
    toward = [p for p in found if p.pull * margin > 0]
    return toward[:SHOWN]


def pull_words(p: Pull) -> str:
    """``9.3 points on average; +0.120 of the margin, toward PRO``."""
    toward = "PRO" if p.pull > 0 else "CON"
    text = f"{p.points:.1f} points on average; {p.pull:+.3f} of the margin, toward {toward}"
    return text + ("; the judges split on it" if p.split else "")


def findings(result: DebateResult) -> list[tuple[str, str]]:
    """Each scored judge's key finding, as ``(judge, finding)``."""
    return [
        (e.judge, e.key_finding)
        for e in result.evaluations
        if e.status == "scored" and e.key_finding
    ]


def _weakest_judge(result: DebateResult) -> str | None:
    alpha = result.agreement.alpha
    without = {
        j: v for j, v in result.decision.diagnostics.alpha_without_judge.items() if v is not None
    }
    if not without:
        return None
    judge, best = max(without.items(), key=lambda kv: (kv[1], kv[0]))
    if alpha is not None and best <= alpha:
        return None
    before = fmt(alpha)  # "undefined" without one
    return (
        f"Without {judge}, alpha would be {fmt(best)} (with every judge: {before}): "
        f"{judge} is the judge the others disagree with most."
    )


def _weakest_dimension(result: DebateResult) -> str | None:
    by_dim = {
        d: v for d, v in result.decision.diagnostics.alpha_by_dimension.items() if v is not None
    }
    if len(by_dim) < 2:
        return None
    name, value = min(by_dim.items(), key=lambda kv: (kv[1], kv[0]))
    if max(by_dim.values()) - value < 1e-9:  # no dimension is weaker than another
        return (
            f"Every rubric dimension has the same alpha ({fmt(value)}): no one kind of "
            "judgement is to blame."
        )
    return f"The judges agree least on {name} (alpha {fmt(value)})."


def _split_arguments(result: DebateResult) -> str | None:
    threshold = result.decision.thresholds.variance
    variance = result.decision.diagnostics.argument_variance or result.agreement.argument_variance
    split = sorted(
        ((a, v) for a, v in variance.items() if v is not None and v >= threshold),
        key=lambda av: -av[1],
    )
    if not split:
        return None
    named = ", ".join(f"{a} (variance {v:.1f})" for a, v in split)
    return f"They split on {named}; the threshold is {threshold:g}."


def split_causes(result: DebateResult) -> list[str]:
    """For a split panel: the judge, the dimension and the arguments behind it.

    Only what the diagnostics show is named: a cause with no data behind it is left out.
    """
    if result.decision.outcome != "irreconcilable":
        return []
    found = (_weakest_judge(result), _weakest_dimension(result), _split_arguments(result))
    return [c for c in found if c is not None]
