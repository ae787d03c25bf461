"""Judge weights earned without labels: a latent-class model of each judge's reliability.

A user with no labelled data still has the judges' agreement with each other. On verdicts,
the one-coin model (:func:`debate.stats.one_coin`) estimates each judge's accuracy on A/B
calls against a latent true answer; a tie, and a judge whose two readings disagree, are
missing for that item, not a third class (ties are mostly order-inconsistent readings, and
counting "tie" as a class rewarded the judge that says it). On scores, a one-factor model
estimates how strongly each judge's scores load on a latent quality. Either gives a
chance-corrected reliability per judge (``2 accuracy - 1`` for verdicts). The weight is the
log-odds of a verdict judge's fitted accuracy (the weight of a judge in the panel's evidence,
:mod:`debate.panel._evidence`), and ``max(0, reliability)`` for scores: a judge who is no
better than chance (or worse: an adversary) earns nothing rather than a negative weight the
vote cannot use.

A latent fit is never used silently when it cannot be trusted: one that did not converge
says so; one whose judges are on average below chance (the mirror of the consensus, which
fits exactly as well) is read flipped when the flipped reading agrees with the judges'
majority, and refused otherwise; one whose fitted accuracies contradict how often each
judge agrees with the others is warned about (:func:`agreement_pattern_note`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import Field

from debate.judgments._score_cells import option_points
from debate.judgments._verdicts import verdict_matrix
from debate.panel import MAX_WEIGHT
from debate.records import NO_CALL, Frozen, Table, VerdictTable
from debate.stats import (
    DEFAULT_MAX_ITER,
    FactorFit,
    OneCoinFit,
    one_coin,
    one_factor,
    reliability_weights,
)

log = logging.getLogger(__name__)

LatentModel = Literal["one-coin", "one-factor"]
MIN_PATTERN_JUDGES = 3
"""Judges with both a fitted accuracy and an agreement rate that the pattern check needs:
with two, a ranking of two cannot contradict another meaningfully."""


class Earned(Frozen):
    """Latent-class weights and what they rest on."""

    model: LatentModel
    weights: dict[str, float] | None
    """None when no judge beats chance or the fit is refused: the caller falls back to equal
    weights."""
    reliability: dict[str, float | None]
    accuracy: dict[str, float | None]
    """Verdicts: each judge's fitted accuracy on its A/B calls, P(its call is the true
    answer), as used (flipped when the fit was read flipped); None for a judge with no A/B
    call and for every judge of a score table (the one-factor model has no accuracy)."""
    converged: bool
    iterations: int
    change: float | None = None
    """The last EM iteration's relative change of the log-likelihood (verdicts)."""
    tolerance: float | None = None
    """The change under which the fit counts as converged (verdicts)."""
    note: str | None = None
    """Why the model could not be fitted, when it could not."""
    notes: list[str] = Field(default_factory=list)
    """Warnings on a fit that was made: not converged, read flipped or refused, at odds with
    the judges' agreement pattern. Each is also logged."""


@dataclass(frozen=True)
class Observed:
    """What a latent-class model reads of a table, computed once however often it is fitted.

    Cross-fitting fits once per fold on a subset of items; the per-judge matrix is the same
    each time, so it is built once and only its rows are chosen per fold.
    """

    model: LatentModel
    rows: NDArray[Any]
    """Verdicts: items x judges A/B calls (0 A, 1 B, NO_CALL for none, a tie or an
    order-inconsistent pair). Scores: (item, option) x judges points."""
    item: NDArray[np.intp]
    """The item of each row."""


def observed(table: Table, dimension: str | None = None) -> Observed:
    """The matrix the table's latent-class model is fitted on."""
    if isinstance(table, VerdictTable):
        calls = verdict_matrix(table).calls
        two_way = np.where(calls == 2, NO_CALL, calls).astype(np.int8)
        return Observed("one-coin", two_way, np.arange(calls.shape[0], dtype=np.intp))
    group, _, scores = option_points(table, dimension=dimension)
    return Observed("one-factor", scores, group.astype(np.intp))


def latent_weights(
    table: Table,
    *,
    dimension: str | None = None,
    items: Sequence[int] | None = None,
    seen: Observed | None = None,
    max_iter: int = DEFAULT_MAX_ITER,
) -> Earned:
    """Fit the latent-class model on ``items`` (all by default) and turn it into weights.

    ``seen`` is :func:`observed` of the same table and dimension, when the caller has it.
    ``max_iter`` bounds the one-coin model's EM (verdicts).
    """
    seen = seen or observed(table, dimension)
    rows = seen.rows if items is None else seen.rows[np.isin(seen.item, np.asarray(items))]
    model = seen.model
    try:
        if model == "one-coin":
            return from_one_coin(table.judges, one_coin(rows, max_iter=max_iter), rows)
        # The rows sorted, so that the fit depends on the set of rows, not their order (a
        # table with its options listed the other way round gives the same weights).
        fit = one_factor(rows[np.lexsort(rows.T[::-1])])
    except ValueError as exc:  # too few judges or calls for the model to be identified
        log.info("%s cannot be fitted (%s); equal weights", model, exc)
        return Earned(
            model=model,
            weights=None,
            reliability=dict.fromkeys(table.judges),
            accuracy=dict.fromkeys(table.judges),
            converged=False,
            iterations=0,
            note=f"{model} cannot be fitted: {str(exc).removesuffix('; use equal weights')}",
        )
    return _from_factor(table.judges, fit)


def _from_factor(judges: tuple[str, ...], fit: FactorFit) -> Earned:
    weights = reliability_weights(fit.reliability)
    if weights is None:
        log.info("one-factor: no judge is more reliable than chance; equal weights")
    notes = [] if fit.converged else [_not_converged("one-factor", fit.iterations)]
    return Earned(
        model="one-factor",
        weights=None if weights is None else _named(judges, weights),
        reliability=_optional(judges, fit.reliability),
        accuracy=dict.fromkeys(judges),
        converged=bool(fit.converged),
        iterations=int(fit.iterations),
        notes=notes,
    )


def log_odds_weights(accuracy: NDArray[np.floating]) -> NDArray[np.float64] | None:
    """``max(0, log(a / (1 - a)))`` per judge, capped like label-trained ones; None if all 0."""
    a = np.clip(np.nan_to_num(np.asarray(accuracy, dtype=np.float64), nan=0.5), 1e-9, 1 - 1e-9)
    weights: NDArray[np.float64] = np.clip(np.log(a / (1 - a)), 0.0, MAX_WEIGHT)
    return weights if (weights > 0).any() else None


def from_one_coin(judges: tuple[str, ...], fit: OneCoinFit, calls: NDArray[np.int8]) -> Earned:
    """Weights from a one-coin fit on ``calls``, with every warning the fit deserves.

    A fit that did not converge says so; it is oriented (:func:`orient`: read flipped, or
    refused with equal weights instead) and checked against the judges' agreement pattern
    (:func:`agreement_pattern_note`). Every note is logged as a warning too.
    """
    notes = [] if fit.converged else [_not_converged("one-coin", fit.iterations, fit)]
    used, orientation = orient(fit, calls)
    notes += orientation
    weights = None
    if used is not None:
        notes += agreement_pattern_note(used.accuracy, calls, judges)
        weights = log_odds_weights(used.accuracy)
        if weights is None:
            log.info("one-coin: no judge is more accurate than chance; equal weights")
    for note in notes:
        log.warning("%s", note)
    shown = used or fit
    return Earned(
        model="one-coin",
        weights=None if weights is None else _named(judges, weights),
        reliability=_optional(judges, shown.reliability),
        accuracy=_optional(judges, shown.accuracy),
        converged=bool(fit.converged),
        iterations=int(fit.iterations),
        change=float(fit.change),
        tolerance=float(fit.tolerance),
        notes=notes,
    )


def describe(fit: Earned) -> list[str]:
    """What a latent fit was, in lines for a summary's or a report's notes.

    The model and its convergence; each judge's fitted accuracy on A/B calls (verdicts);
    then the fit's warnings (a fit that did not converge among them), and why it fell back
    to equal weights, if it did.
    """
    if fit.note is not None:
        return [fit.note + ": equal weights instead"]
    what = "one-coin model over A/B calls" if fit.model == "one-coin" else "one-factor model"
    state = "converged" if fit.converged else "not converged"
    if fit.converged and fit.change is not None and fit.tolerance is not None:
        state += f" (log-likelihood change {fit.change:.2g} <= {fit.tolerance:.2g})"
    lines = [f"latent weights: {what}, {fit.iterations} iterations, {state}"]
    fitted = {j: a for j, a in fit.accuracy.items() if a is not None}
    if fitted:
        lines.append(
            "fitted accuracy on A/B calls: " + ", ".join(f"{j} {a:.3f}" for j, a in fitted.items())
        )
    lines += fit.notes
    if fit.weights is None and not any("refused" in n for n in fit.notes):
        lines.append("no judge is more reliable than chance: equal weights instead")
    return lines


def _not_converged(model: str, iterations: int, fit: OneCoinFit | None = None) -> str:
    change = "" if fit is None else f" (last change {fit.change:.2g} > {fit.tolerance:.2g})"
    return (
        f"the {model} fit did NOT converge in {iterations} iterations{change}: its weights "
        "are the last iteration's, not an optimum"
    )


def orient(fit: OneCoinFit, calls: NDArray[np.int8]) -> tuple[OneCoinFit | None, list[str]]:
    """The fit as it is to be read, or None when it must not be used, and why.

    The one-coin model cannot tell a panel of accurate judges from the same panel reading
    every item the other way round: both fit exactly alike. A fit whose judges are on average
    below chance (mean fitted accuracy under 0.5) found that mirror. It is read flipped when
    the flipped reading agrees with the judges' strict majority on more than half of the
    items that have one (the reading the latent weights assume: judges better than chance
    on average); otherwise it is refused, and the caller uses equal weights.
    """
    accuracy = fit.accuracy[np.isfinite(fit.accuracy)]
    mean = float(accuracy.mean()) if accuracy.size else float("nan")
    if not mean < 0.5:
        return fit, []
    flipped = fit.flipped()
    agree = majority_agreement(flipped.log_odds, calls)
    found = (
        f"the one-coin fit found the mirror of the judges' consensus (mean fitted accuracy "
        f"{mean:.3f}, below 0.5)"
    )
    if agree > 0.5:
        return flipped, [
            f"{found}; it is read flipped, which agrees with the judges' majority on "
            f"{agree:.0%} of the items that have one"
        ]
    shown = "no item" if np.isnan(agree) else f"{agree:.0%} of the items"
    return None, [
        f"{found}, and flipped it agrees with the judges' majority on {shown}: latent "
        "weights refused, equal weights instead"
    ]


def majority_agreement(log_odds: NDArray[np.float64], calls: NDArray[np.int8]) -> float:
    """Share of the items with a strict A/B majority whose posterior leans the same way."""
    lead = (calls == 0).sum(axis=1) - (calls == 1).sum(axis=1)
    decided = (lead != 0) & (log_odds != 0)
    if not decided.any():
        return float("nan")
    return float((np.sign(lead[decided]) == np.sign(log_odds[decided])).mean())


def agreement_rates(calls: NDArray[np.int8]) -> NDArray[np.float64]:
    """Per judge, how often its A/B call is the strict majority of the other judges' calls.

    Over the items where the judge called A or B and the others have a strict majority;
    NaN for a judge with no such item.
    """
    n_a, n_b = (calls == 0).sum(axis=1), (calls == 1).sum(axis=1)
    rates = np.full(calls.shape[1], np.nan)
    for j in range(calls.shape[1]):
        own = calls[:, j]
        lead = n_a - n_b - np.where(own == 0, 1, 0) + np.where(own == 1, 1, 0)
        usable = (own >= 0) & (lead != 0)
        if usable.any():
            rates[j] = float(((lead[usable] > 0) == (own[usable] == 0)).mean())
    return rates


def agreement_pattern_note(
    accuracy: NDArray[np.float64], calls: NDArray[np.int8], judges: Sequence[str]
) -> list[str]:
    """A warning when the fitted accuracies contradict how often each judge agrees.

    The rule, over the judges with both a fitted accuracy and an agreement rate (at least
    :data:`MIN_PATTERN_JUDGES`): warn when the judge that agrees most often with the others'
    majority (:func:`agreement_rates`) has a fitted accuracy below the median of the fitted
    accuracies, or when the rank correlation (Spearman) of fitted accuracy and agreement
    rate is negative. A latent model of independent judges reads accuracy off agreement, so
    either means the fit rests on something else (judges that err together, a poor optimum).
    """
    rates = agreement_rates(calls)
    usable = np.isfinite(accuracy) & np.isfinite(rates)
    if int(usable.sum()) < MIN_PATTERN_JUDGES:
        return []
    acc, rate = accuracy[usable], rates[usable]
    names = [j for j, ok in zip(judges, usable.tolist(), strict=True) if ok]
    top = int(np.argmax(rate))
    median = float(np.median(acc))
    rho = _rank_correlation(acc, rate)
    if acc[top] < median:
        return [
            f"the latent fit is at odds with the judges' agreement: {names[top]} agrees most "
            f"often with the others' majority ({rate[top]:.0%}) but its fitted accuracy "
            f"{acc[top]:.3f} is below the median {median:.3f}; check the latent weights "
            "against labels before relying on them"
        ]
    if rho < 0:
        return [
            f"the latent fit is at odds with the judges' agreement: fitted accuracies rank "
            f"against how often each judge agrees with the others' majority (Spearman "
            f"{rho:+.2f}); check the latent weights against labels before relying on them"
        ]
    return []


def _rank_correlation(x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    """Spearman's rho (average ranks for ties); NaN when either side does not vary."""
    from scipy.stats import rankdata

    rx, ry = rankdata(x), rankdata(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    scale = float(np.sqrt((rx**2).sum() * (ry**2).sum()))
    return float((rx * ry).sum() / scale) if scale > 0 else float("nan")


def _named(judges: tuple[str, ...], values: NDArray[np.float64]) -> dict[str, float]:
    return {j: float(v) for j, v in zip(judges, values, strict=True)}


def _optional(judges: tuple[str, ...], values: NDArray[np.float64]) -> dict[str, float | None]:
    return {j: (float(v) if np.isfinite(v) else None) for j, v in zip(judges, values, strict=True)}
