"""Platt calibration: a raw confidence score made into a probability of being right.

``p = sigmoid(slope * score + intercept)`` with ``slope >= 0``, fitted by maximum likelihood
on labelled units (Platt 1999, with the Newton method and step halving of Lin, Lin and Weng
2007). The selective verdicts choose their threshold on this probability.

Optionally, further features enter the same logistic with ridge-penalised coefficients
(``doubt``): the panel passes how far each judge fell short of a whole vote
(:func:`debate.panel._evidence.doubt_features`). A judge that calls a pair a tie says the
pair is close, which ``|L|`` cannot say: on PandaLM, the pairs where GPT-3.5 picks a side
and PandaLM-7B says tie agree with people 0.47 of the time, below the pairs the two judges
*disagree* on (0.57), though their ``|L|`` is higher.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from debate.stats._plain import Platt
from debate.stats._units import (
    BoolArray,
    FloatArray,
    IntArray,
    group_codes,
    numbers,
    outcomes,
)

NEWTON_STEPS = 100
"""Newton iterations at most for :func:`platt_fit`; a two-parameter convex fit converges in
well under twenty from the flat start."""
NEWTON_TOL = 1e-10
"""Stop when the gradient of the mean log-loss is below this (in every parameter)."""
DOUBT_RIDGE = 2.0
"""The penalty ``DOUBT_RIDGE / 2 * sum(coef**2)`` on the summed log-loss of the feature
coefficients: a normal prior of standard deviation 0.7 on each, so a judge's ties move
``p_agree`` only as far as tens of labelled units show, and twenty judges' features do not
fit the noise of a few hundred units."""


def platt_fit(
    score: ArrayLike,
    correct: ArrayLike,
    *,
    groups: ArrayLike | None = None,
    features: ArrayLike | None = None,
) -> Platt:
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
        features: ``units x k`` further features (finite), with coefficients penalised by
            :data:`DOUBT_RIDGE`; their coefficients are the result's ``doubt``.

    Returns:
        The fit; ``n`` is the number of scored units.

    Raises:
        ValueError: arrays of different lengths, a score that is infinite or not a number,
            or no scored unit.
    """
    x, y, codes = _units(score, correct, groups)
    scored = ~np.isnan(x)
    extra = _features(features, scored)
    x, y = x[scored], y[scored]
    w = np.ones(x.size) if codes is None else _item_weights(codes[scored])
    n_pos, n_neg = float(w[y].sum()), float(w[~y].sum())
    t = np.where(y, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    flat = float(np.log(np.average(t, weights=w) / (1 - np.average(t, weights=w))))
    ridge = DOUBT_RIDGE / float(w.sum())  # the penalty on the summed loss, per unit weight
    return _solve(x, extra, t, w / w.sum(), flat, ridge)


def _units(
    score: ArrayLike, correct: ArrayLike, groups: ArrayLike | None
) -> tuple[FloatArray, BoolArray, IntArray | None]:
    """Checked scores, outcomes and item codes, one per unit (NaN scores kept)."""
    x = numbers(score, "score")
    if x.ndim != 1:
        raise ValueError(f"score must be one number per unit (1-D); got {x.ndim}-D")
    y = outcomes(correct, x.size)
    codes = None if groups is None else group_codes(groups, x.size)
    if np.isinf(x).any():
        raise ValueError("score must be finite numbers, or NaN for a unit without a score")
    if np.isnan(x).all():
        raise ValueError("platt_fit needs at least one unit with a score")
    return x, y, codes


def _solve(
    x: FloatArray, extra: FloatArray, t: FloatArray, w: FloatArray, flat: float, ridge: float
) -> Platt:
    """The fit on scored units: free slope if it comes out positive, else slope 0.

    Newton runs on the standardised score, whatever the score's scale, and the slope and
    intercept are mapped back to the raw score.
    """
    centre, spread = float(x.mean()), float(x.std())
    if spread > 0:
        theta = _newton(
            np.column_stack([(x - centre) / spread, extra]), t, w, flat, ridge, score=True
        )
        a, b, doubt = float(theta[0]), float(theta[-1]), theta[1:-1]
        if a > 0:
            return Platt(
                slope=a / spread,
                intercept=b - a * centre / spread,
                n=int(x.size),
                doubt=[float(c) for c in doubt],
            )
    # the score carries no evidence, or its best slope is not positive: slope 0
    if not extra.shape[1]:
        return Platt(slope=0.0, intercept=flat, n=int(x.size))
    theta = _newton(extra, t, w, flat, ridge, score=False)
    return Platt(
        slope=0.0, intercept=float(theta[-1]), n=int(x.size), doubt=[float(c) for c in theta[:-1]]
    )


def _features(features: ArrayLike | None, scored: BoolArray) -> FloatArray:
    """The scored units' features, ``units x k`` (``k = 0`` without features)."""
    if features is None:
        return np.zeros((int(scored.sum()), 0))
    z = numbers(features, "features")
    if z.ndim != 2 or z.shape[0] != scored.size:
        raise ValueError(f"features must be one row per unit ({scored.size}); got shape {z.shape}")
    if not np.isfinite(z).all():
        raise ValueError("features must be finite numbers")
    return np.asarray(z[scored], dtype=np.float64)


def _newton(
    x: FloatArray, t: FloatArray, w: FloatArray, start: float, ridge: float, *, score: bool
) -> FloatArray:
    """Minimise the weighted log-loss of ``sigmoid(x @ c + b)`` against soft targets ``t``.

    With ``score``, ``x``'s first column is the standardised score and goes unpenalised;
    the others (features) carry ``ridge / 2 * c**2``. Returns ``(c..., b)``.
    """
    design = np.column_stack([x, np.ones(t.size)])
    k = design.shape[1]
    penalty = np.full(k, ridge)
    penalty[-1] = 0.0
    if score:
        penalty[0] = 0.0
    theta = np.zeros(k)
    theta[-1] = start

    def loss_of(th: FloatArray) -> float:
        return _log_loss(design @ th, t, w) + 0.5 * float(np.sum(penalty * th * th))

    loss = loss_of(theta)
    for _ in range(NEWTON_STEPS):
        p = _sigmoid(design @ theta)
        grad = design.T @ (w * (p - t)) + penalty * theta
        if np.abs(grad).max() < NEWTON_TOL:
            break
        hess = (design * (w * p * (1 - p))[:, None]).T @ design + np.diag(penalty)
        step = np.linalg.solve(hess + 1e-12 * np.eye(k), grad)
        scale = 1.0
        while scale > 1e-8:  # halve the step until the loss goes down (Lin, Lin, Weng 2007)
            trial = theta - scale * step
            trial_loss = loss_of(trial)
            if trial_loss <= loss:
                theta, loss = trial, trial_loss
                break
            scale /= 2
        else:
            break
    return theta


def _log_loss(f: FloatArray, t: FloatArray, w: FloatArray) -> float:
    """Weighted cross-entropy of soft targets, without overflow for large ``|f|``."""
    return float(np.sum(w * (t * np.logaddexp(0, -f) + (1 - t) * np.logaddexp(0, f))))


def _sigmoid(f: FloatArray) -> FloatArray:
    # tanh form: no overflow warning for large |f| (filterwarnings=error in the tests).
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * f)), dtype=np.float64)


def _item_weights(codes: IntArray) -> FloatArray:
    """Per unit, ``1 / scored units of its item``: each item weighs 1."""
    return np.asarray(1.0 / np.bincount(codes)[codes], dtype=np.float64)
