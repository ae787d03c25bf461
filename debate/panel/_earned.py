"""Judge weights earned without labels: a latent-class model of each judge's reliability.

A user with no labelled data still has the judges' agreement with each other. On verdicts,
Dawid-Skene estimates each judge's confusion matrix against a latent true verdict; on
scores, a one-factor model estimates how strongly each judge's scores load on a latent
quality. Either gives a chance-corrected reliability per judge, and the weight is
``max(0, reliability)``: a judge who is no better than chance (or worse: an adversary)
earns nothing rather than a negative weight the vote cannot use.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from debate.panel._recorded import option_points
from debate.panel._verdicts import verdict_matrix
from debate.records._judgments import ScoreTable, Table, VerdictTable
from debate.records._transcript import Frozen
from debate.stats import dawid_skene, one_factor, reliability_weights
from debate.stats._latent import FactorFit, LatentClassFit

log = logging.getLogger(__name__)


class Earned(Frozen):
    """Latent-class weights and what they rest on."""

    model: Literal["dawid-skene", "one-factor"]
    weights: dict[str, float] | None
    """None when no judge beats chance: the caller falls back to equal weights."""
    reliability: dict[str, float | None]
    converged: bool
    iterations: int
    note: str | None = None
    """Why the model could not be fitted, when it could not."""


def latent_weights(
    table: Table, *, dimension: str | None = None, items: Sequence[int] | None = None
) -> Earned:
    """Fit the latent-class model on ``items`` (all by default) and turn it into weights."""
    model: Literal["dawid-skene", "one-factor"]
    try:
        if isinstance(table, VerdictTable):
            model = "dawid-skene"
            calls = verdict_matrix(table).calls
            fit: LatentClassFit | FactorFit = dawid_skene(
                calls if items is None else calls[np.asarray(items, dtype=np.intp)]
            )
        else:
            model = "one-factor"
            fit = one_factor(_score_rows(table, dimension, items))
    except ValueError as exc:  # too few judges or labels for the model to be identified
        log.info("%s cannot be fitted (%s); equal weights", model, exc)
        return Earned(
            model=model,
            weights=None,
            reliability=dict.fromkeys(table.judges),
            converged=False,
            iterations=0,
            note=f"{model} cannot be fitted: {exc}",
        )
    weights = reliability_weights(fit.reliability)
    reliability = {
        judge: (float(r) if np.isfinite(r) else None)
        for judge, r in zip(table.judges, fit.reliability, strict=True)
    }
    if weights is None:
        log.info("%s: no judge is more reliable than chance; equal weights", model)
    return Earned(
        model=model,
        weights=None
        if weights is None
        else {j: float(w) for j, w in zip(table.judges, weights, strict=True)},
        reliability=reliability,
        converged=bool(fit.converged),
        iterations=int(fit.iterations),
    )


def _score_rows(
    table: ScoreTable, dimension: str | None, items: Sequence[int] | None
) -> NDArray[np.float64]:
    group, _, scores = option_points(table, dimension=dimension)
    if items is None:
        return scores
    return scores[np.isin(group, np.asarray(items))]
