"""Platt calibration: a raw confidence score made into a probability of being right.

``p = sigmoid(slope * score + intercept)`` with ``slope >= 0``, fitted by maximum likelihood
on labelled units (Platt 1999, with the Newton method and step halving of Lin, Lin and Weng
2007). The selective verdicts choose their threshold on this probability.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from pydantic import Field

from debate.stats._units import (
    FloatArray,
    IntArray,
    StatsRecord,
    group_codes,
    numbers,
    outcomes,
)

NEWTON_STEPS = 100
"""Newton iterations at most for :func:`platt_fit`; a two-parameter convex fit converges in
well under twenty from the flat start."""
NEWTON_TOL = 1e-10
"""Stop when the gradient of the mean log-loss is below this (in both parameters)."""


class Platt(StatsRecord):
    """A monotone logistic calibration ``p = sigmoid(slope * score + intercept)``."""

    slope: float = Field(ge=0)
    """0 when the score carries no evidence (every unit then gets the same probability)."""
    intercept: float
    method: Literal["platt"] = "platt"
    """The calibration family, so a policy file names how its probabilities were made."""
    n: int = Field(ge=0)
    """Labelled units the fit used (units without a score are left out)."""

    def predict(self, score: ArrayLike) -> FloatArray:
        """The calibrated probability of each score (NaN stays NaN: no score, no probability).

        Args:
            score: One score or an array of them.

        Returns:
            An array of the input's shape (0-d for a scalar).

        Raises:
            ValueError: a score that is not a number.
        """
        x = numbers(score, "score")
        return _sigmoid(self.slope * x + self.intercept)


def platt_fit(score: ArrayLike, correct: ArrayLike, *, groups: ArrayLike | None = None) -> Platt:
    """Fit a Platt calibration by maximum likelihood, with slope held at 0 or above.

    Platt rather than isotonic regression: two parameters are stable with tens of labels,
    where isotonic's steps follow the noise; and the map is strictly increasing, so it keeps
    the ranking the threshold is chosen on, where isotonic's flat steps would tie units and
    make a threshold take or leave them all at once. The targets are Platt's smoothed ones,
    ``(n+ + 1) / (n+ + 2)`` for a correct unit and ``1 / (n- + 2)`` for a wrong one, so that
    all-correct, all-wrong and perfectly separated data still give finite parameters. The
    log-loss is convex, so Newton's method (with step halving) finds its minimum; when that
    minimum has a negative slope the constrained one lies on ``slope = 0``.

    Args:
        score: Per unit, the raw confidence (any real number; NaN: no score, left out).
        correct: Per unit, whether the answer the score is about was right.
        groups: Per unit, its item id. Each item then weighs 1 in the fit whatever its
            number of units (a council item has many pairs), and the smoothing counts items.

    Returns:
        The fit; ``n`` is the number of scored units.

    Raises:
        ValueError: arrays of different lengths, a score that is infinite or not a number,
            or no scored unit.
    """
    x = numbers(score, "score")
    if x.ndim != 1:
        raise ValueError(f"score must be one number per unit (1-D); got {x.ndim}-D")
    y = outcomes(correct, x.size)
    codes = None if groups is None else group_codes(groups, x.size)
    scored = ~np.isnan(x)
    if np.isinf(x).any():
        raise ValueError("score must be finite numbers, or NaN for a unit without a score")
    if not scored.any():
        raise ValueError("platt_fit needs at least one unit with a score")
    x, y = x[scored], y[scored]
    w = np.ones(x.size) if codes is None else _item_weights(codes[scored])
    n_pos, n_neg = float(w[y].sum()), float(w[~y].sum())
    t = np.where(y, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    flat = float(np.log(np.average(t, weights=w) / (1 - np.average(t, weights=w))))
    centre, spread = float(x.mean()), float(x.std())
    if not spread > 0:
        return Platt(slope=0.0, intercept=flat, n=int(x.size))
    a, b = _newton((x - centre) / spread, t, w / w.sum(), flat)
    if a <= 0:
        return Platt(slope=0.0, intercept=flat, n=int(x.size))
    return Platt(slope=a / spread, intercept=b - a * centre / spread, n=int(x.size))


def _newton(z: FloatArray, t: FloatArray, w: FloatArray, start: float) -> tuple[float, float]:
    """Minimise the weighted log-loss of ``sigmoid(a z + b)`` against soft targets ``t``."""
    theta = np.array([0.0, start])
    design = np.column_stack([z, np.ones_like(z)])
    loss = _log_loss(design @ theta, t, w)
    for _ in range(NEWTON_STEPS):
        p = _sigmoid(design @ theta)
        grad = design.T @ (w * (p - t))
        if np.abs(grad).max() < NEWTON_TOL:
            break
        hess = (design * (w * p * (1 - p))[:, None]).T @ design
        step = np.linalg.solve(hess + 1e-12 * np.eye(2), grad)
        scale = 1.0
        while scale > 1e-8:  # halve the step until the loss goes down (Lin, Lin, Weng 2007)
            trial = theta - scale * step
            trial_loss = _log_loss(design @ trial, t, w)
            if trial_loss <= loss:
                theta, loss = trial, trial_loss
                break
            scale /= 2
        else:
            break
    return float(theta[0]), float(theta[1])


def _log_loss(f: FloatArray, t: FloatArray, w: FloatArray) -> float:
    """Weighted cross-entropy of soft targets, without overflow for large ``|f|``."""
    return float(np.sum(w * (t * np.logaddexp(0, -f) + (1 - t) * np.logaddexp(0, f))))


def _sigmoid(f: FloatArray) -> FloatArray:
    # tanh form: no overflow warning for large |f| (filterwarnings=error in the tests).
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * f)), dtype=np.float64)


def _item_weights(codes: IntArray) -> FloatArray:
    """Per unit, ``1 / scored units of its item``: each item weighs 1."""
    return np.asarray(1.0 / np.bincount(codes)[codes], dtype=np.float64)
