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
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from debate.panel._recorded import option_points
from debate.panel._verdicts import verdict_matrix
from debate.records._judgments import Table, VerdictTable
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


@dataclass(frozen=True)
class Observed:
    """What a latent-class model reads of a table, computed once however often it is fitted.

    Cross-fitting fits once per fold on a subset of items; the per-judge matrix is the same
    each time, so it is built once and only its rows are chosen per fold.
    """

    model: Literal["dawid-skene", "one-factor"]
    rows: NDArray[Any]
    """Verdicts: items x judges calls. Scores: (item, option) x judges points."""
    item: NDArray[np.intp]
    """The item of each row."""


def observed(table: Table, dimension: str | None = None) -> Observed:
    """The matrix the table's latent-class model is fitted on."""
    if isinstance(table, VerdictTable):
        calls = verdict_matrix(table).calls
        return Observed("dawid-skene", calls, np.arange(calls.shape[0], dtype=np.intp))
    group, _, scores = option_points(table, dimension=dimension)
    return Observed("one-factor", scores, group.astype(np.intp))


def latent_weights(
    table: Table,
    *,
    dimension: str | None = None,
    items: Sequence[int] | None = None,
    seen: Observed | None = None,
) -> Earned:
    """Fit the latent-class model on ``items`` (all by default) and turn it into weights.

    ``seen`` is :func:`observed` of the same table and dimension, when the caller has it.
    """
    seen = seen or observed(table, dimension)
    rows = seen.rows if items is None else seen.rows[np.isin(seen.item, np.asarray(items))]
    model = seen.model
    try:
        fit: LatentClassFit | FactorFit = (
            dawid_skene(rows) if model == "dawid-skene" else one_factor(rows)
        )
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
