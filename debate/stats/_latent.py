"""Judge reliability from agreement alone: latent-class and one-factor models.

A user with no labelled items still deserves weights a judge has earned. When several
judges label the same items, the items' true answers are a hidden variable and each judge's
reliability is read off how it agrees with the others, weighted by how reliable they are:

* :func:`dawid_skene` for categorical calls of K classes: Dawid and Skene (1979), each
  judge a confusion matrix ``P(judge says l | truth k)``, fitted by EM. Pairwise verdicts
  are not fitted with it (a tie is no third truth: it is mostly an order-inconsistent
  reading); their weights come from :func:`debate.stats.one_coin` over A/B calls.
* :func:`one_factor` for scores: ``x_ij = mu_j + lambda_j f_i + e_ij`` with a latent
  quality ``f_i ~ N(0, 1)`` and ``e_ij ~ N(0, psi_j)``, fitted by maximum likelihood (EM
  with missing data).

Arrays only, no judge names: the caller maps columns to judges.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

logger = logging.getLogger(__name__)

FloatArray = NDArray[np.float64]
SMOOTHING = 0.01
"""Dirichlet pseudo-count added to every cell of every confusion matrix (and to the class
priors): a judge that never said a class gets a tiny probability of saying it, not
``log(0)``, and a class no item seems to have keeps a prior above 0. Small against any
real count (one item weighs 1), so it moves no estimate that data supports."""
PSI_FLOOR = 0.005
"""Floor on a judge's noise variance, as a share of its observed variance: a near-perfect
judge would otherwise drive ``psi`` to 0 and the likelihood to infinity (a Heywood case).
The floor caps a reliability at ``sqrt(1 - 0.005)``, about 0.9975."""


@dataclass(frozen=True)
class LatentClassFit:
    """A fitted Dawid-Skene model."""

    priors: FloatArray
    """``K``: the share of items in each true class."""
    confusion: FloatArray
    """``judges x K x K``: ``confusion[j, k, l]`` is P(judge j says l | truth k)."""
    posterior: FloatArray
    """``items x K``: P(truth k | every label on the item); the priors where none."""
    accuracy: FloatArray
    """Per judge, P(says the truth) = ``sum_k priors[k] confusion[j, k, k]``; NaN for a
    judge that gave no label."""
    reliability: FloatArray
    """Per judge, accuracy corrected for chance: ``(accuracy - chance) / (1 - chance)``
    where ``chance = sum_k priors[k] P(judge says k)``; 0 is a judge no better than its own
    habits, below 0 one that prefers wrong answers; NaN where undefined."""
    converged: bool
    iterations: int
    log_likelihood: float
    notes: tuple[str, ...] = ()
    """What the fit could not estimate (judges without labels), by column index."""


@dataclass(frozen=True)
class FactorFit:
    """A fitted one-factor model."""

    means: FloatArray
    """Per judge, ``mu_j``: its average score."""
    loadings: FloatArray
    """Per judge, ``lambda_j``; signs fixed so that their sum is positive (higher factor
    scores are what most judges score higher)."""
    noise: FloatArray
    """Per judge, ``psi_j``: the variance of its scores not explained by the factor."""
    reliability: FloatArray
    """Per judge, ``lambda_j / sqrt(lambda_j^2 + psi_j)``: the correlation of its scores
    with the latent quality; below 0 for a judge that scores it backwards; NaN for a judge
    left out of the fit."""
    factor_scores: FloatArray
    """Per row, the posterior mean of the latent quality (0 for a row nobody scored)."""
    converged: bool
    iterations: int
    log_likelihood: float
    notes: tuple[str, ...] = ()


# --- Dawid-Skene -----------------------------------------------------------------------


def dawid_skene(
    labels: NDArray[np.integer],
    n_classes: int = 3,
    *,
    max_iter: int = 500,
    tol: float = 1e-8,
    seed: int = 0,
) -> LatentClassFit:
    """Fit judges' confusion matrices and items' true classes from labels alone (EM).

    Args:
        labels: ``items x judges`` class codes ``0..n_classes-1``, ``-1`` where a judge
            gave no label.
        n_classes: ``K``, the number of classes.
        max_iter: EM iterations at most.
        tol: stop when the log-likelihood moves by less than ``tol`` times its size.
        seed: breaks exact ties of the initial majority vote, reproducibly.

    Returns:
        The fit; classes keep the meaning of the codes because EM starts from the (soft)
        majority vote, which puts each class where most judges put it.

    Raises:
        ValueError: a code out of range, fewer than two judges, or no label at all.
    """
    x = _check_labels(labels, n_classes)
    onehot = _onehot(x, n_classes)  # items x judges x K
    has_labels: NDArray[np.bool_] = np.asarray((x >= 0).any(axis=0))

    def round_(posterior: FloatArray) -> tuple[FloatArray, float]:
        return _ds_e_step(onehot, *_ds_m_step(onehot, posterior))

    stop = _em(round_, _majority_start(onehot, seed), max_iter, tol, "Dawid-Skene")
    estimates, log_likelihood = _ds_estimates(onehot, stop.state, has_labels)
    return LatentClassFit(
        **estimates,
        converged=stop.converged,
        iterations=stop.iterations,
        log_likelihood=float(log_likelihood),
        notes=_no_label_notes(has_labels),
    )


S = TypeVar("S")


@dataclass(frozen=True)
class _Stop(Generic[S]):
    """Where EM stopped: its last state and log-likelihood, and whether it settled."""

    state: S
    log_likelihood: float
    iterations: int
    converged: bool


def _em(
    round_: Callable[[S], tuple[S, float]], state: S, max_iter: int, tol: float, model: str
) -> _Stop[S]:
    """Repeat an EM round until the log-likelihood moves by at most ``tol`` of its size.

    One loop for both models, so they stop by one rule and say alike when they do not.
    """
    previous = -math.inf
    log_likelihood, iterations, converged = -math.inf, 0, False
    for iterations in range(1, max_iter + 1):  # noqa: B007 (read after the loop)
        state, log_likelihood = round_(state)
        if abs(log_likelihood - previous) <= tol * (1.0 + abs(log_likelihood)):
            converged = True
            break
        previous = log_likelihood
    if not converged:
        logger.warning("%s did not converge in %d iterations", model, max_iter)
    return _Stop(state, log_likelihood, iterations, converged)


def _ds_estimates(
    onehot: FloatArray, posterior: FloatArray, has_labels: NDArray[np.bool_]
) -> tuple[dict[str, FloatArray], float]:
    """The fit's estimates and log-likelihood, after one more round from EM's posterior.

    The extra round makes the posterior returned the one the returned priors give.
    """
    priors, confusion = _ds_m_step(onehot, posterior)
    posterior, log_likelihood = _ds_e_step(onehot, priors, confusion)
    accuracy, reliability = _ds_reliability(priors, confusion, has_labels)
    estimates = {
        "priors": priors,
        "confusion": confusion,
        "posterior": posterior,
        "accuracy": accuracy,
        "reliability": reliability,
    }
    return estimates, log_likelihood


def _check_labels(labels: NDArray[np.integer], n_classes: int) -> NDArray[np.int64]:
    x = np.asarray(labels)
    if n_classes < 2:
        raise ValueError(f"n_classes is {n_classes}: give at least 2 classes")
    if x.ndim != 2:
        raise ValueError(f"labels must be a 2-D items x judges array; got {x.ndim} dimension(s)")
    if x.size and not np.issubdtype(x.dtype, np.integer):
        raise ValueError(f"labels must be integer class codes (-1 missing); got dtype {x.dtype}")
    x = x.astype(np.int64)
    if x.shape[1] < 2:
        raise ValueError(
            f"labels has {x.shape[1]} judge column(s): reliability from agreement needs at "
            "least two judges; use equal weights"
        )
    bad = (x < -1) | (x >= n_classes)
    if bad.any():
        row, col = map(int, np.argwhere(bad)[0])
        raise ValueError(
            f"labels[{row}, {col}] is {x[row, col]}: codes are 0..{n_classes - 1}, -1 missing"
        )
    if not (x >= 0).any():
        raise ValueError("labels has no label at all (every cell is -1): nothing to fit")
    return x


def _onehot(x: NDArray[np.int64], n_classes: int) -> FloatArray:
    out = np.zeros((*x.shape, n_classes))
    rows, cols = np.nonzero(x >= 0)
    out[rows, cols, x[rows, cols]] = 1.0
    return out


def _majority_start(onehot: FloatArray, seed: int) -> FloatArray:
    """Soft majority vote: each item's share of labels per class; uniform where none."""
    counts = onehot.sum(axis=1)
    # A vanishing seeded jitter so that an exact tie does not start EM on a saddle point.
    counts = counts + 1e-6 * np.random.default_rng(seed).random(counts.shape)
    totals = counts.sum(axis=1, keepdims=True)
    start: FloatArray = counts / totals
    return start


def _ds_m_step(onehot: FloatArray, posterior: FloatArray) -> tuple[FloatArray, FloatArray]:
    n_classes = posterior.shape[1]
    labelled = onehot.any(axis=(1, 2))
    priors = posterior[labelled].sum(axis=0) + SMOOTHING
    priors = priors / priors.sum()
    # counts[j, k, l] = sum_i posterior[i, k] * [judge j said l on item i]
    counts = np.einsum("ik,ijl->jkl", posterior, onehot) + SMOOTHING / n_classes
    confusion: FloatArray = counts / counts.sum(axis=2, keepdims=True)
    return priors, confusion


def _ds_e_step(
    onehot: FloatArray, priors: FloatArray, confusion: FloatArray
) -> tuple[FloatArray, float]:
    # scipy.special costs 0.15 s to import: paid by the latent-class fit that uses it, not by
    # every command that imports debate.stats (a debate never fits one).
    from scipy.special import logsumexp

    log_joint = np.log(priors)[None, :] + np.einsum("ijl,jkl->ik", onehot, np.log(confusion))
    log_norm = logsumexp(log_joint, axis=1, keepdims=True)
    posterior: FloatArray = np.exp(log_joint - log_norm)
    labelled = onehot.any(axis=(1, 2))
    return posterior, float(log_norm[labelled].sum())


def _ds_reliability(
    priors: FloatArray, confusion: FloatArray, has_labels: NDArray[np.bool_]
) -> tuple[FloatArray, FloatArray]:
    diagonal = np.einsum("jkk->jk", confusion)
    accuracy = diagonal @ priors
    says = np.einsum("k,jkl->jl", priors, confusion)  # P(judge says l)
    chance = says @ priors
    with np.errstate(divide="ignore", invalid="ignore"):
        reliability = (accuracy - chance) / (1.0 - chance)
    undefined = ~has_labels | (1.0 - chance < 1e-12)
    accuracy = np.where(has_labels, accuracy, np.nan)
    reliability = np.where(undefined, np.nan, reliability)
    return accuracy, reliability


def _no_label_notes(has_labels: NDArray[np.bool_]) -> tuple[str, ...]:
    notes = tuple(
        f"judge column {j} gave no label: its reliability is undefined (NaN, weight 0)"
        for j in np.flatnonzero(~has_labels)
    )
    for note in notes:
        logger.info(note)
    return notes


# --- one factor ------------------------------------------------------------------------


@dataclass
class _Params:
    mu: FloatArray
    lam: FloatArray
    psi: FloatArray


def one_factor(
    scores: NDArray[np.floating],
    *,
    max_iter: int = 1000,
    tol: float = 1e-8,
) -> FactorFit:
    """Fit a one-factor model to judges' scores by maximum likelihood (EM, missing data).

    Each row is one scored thing (an option of an item); each judge's score is a linear
    reading of its latent quality plus the judge's own noise. EM alternates the posterior
    of each row's quality given the scores it has (a normal with precision
    ``1 + sum_j lambda_j^2 / psi_j`` over the judges that scored it) with a regression of
    each judge's scores on it, so a missing score is left out, never filled in.

    Args:
        scores: ``rows x judges``, NaN where a judge gave no score.
        max_iter: EM iterations at most.
        tol: stop when the log-likelihood moves by less than ``tol`` times its size.

    Returns:
        The fit. A judge with fewer than two scores or scores that never vary is left out
        (reliability NaN, said in ``notes``).

    Raises:
        ValueError: not 2-D, an infinite score, or fewer than three judges left to fit
            (with two the model is not identified: any split of their covariance between
            the two loadings fits equally well).
    """
    x = _check_scores(scores)
    usable, notes = _usable_judges(x)
    xs = x[:, usable]
    observed = ~np.isnan(xs)
    filled = np.where(observed, xs, 0.0)
    floor = PSI_FLOOR * np.nanvar(xs, axis=0)

    def round_(params: _Params) -> tuple[_Params, float]:
        mean, var = _fa_posterior(filled, observed, params)
        params = _fa_m_step(filled, observed, mean, var, floor)
        return params, _fa_log_likelihood(filled, observed, params)

    stop = _em(round_, _fa_start(xs), max_iter, tol, "the one-factor model")
    fit = _factor_fit(x.shape[1], usable, stop.state, (filled, observed))
    return FactorFit(
        **fit,
        converged=stop.converged,
        iterations=stop.iterations,
        log_likelihood=float(stop.log_likelihood),
        notes=notes,
    )


def _check_scores(scores: NDArray[np.floating]) -> FloatArray:
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"scores must be a 2-D rows x judges array; got {x.ndim} dimension(s)")
    if np.isinf(x).any():
        row, col = map(int, np.argwhere(np.isinf(x))[0])
        raise ValueError(f"scores[{row}, {col}] is infinite: give a finite score or NaN")
    return x


def _usable_judges(x: FloatArray) -> tuple[NDArray[np.intp], tuple[str, ...]]:
    counts = (~np.isnan(x)).sum(axis=0)
    with np.errstate(invalid="ignore"):
        variances = np.nanvar(np.where(counts[None, :] > 0, x, 0.0), axis=0)
    notes = []
    for j in range(x.shape[1]):
        if counts[j] < 2:
            notes.append(f"judge column {j} gave {counts[j]} score(s): reliability undefined")
        elif not variances[j] > 0:
            notes.append(f"judge column {j} gave the same score every time: reliability undefined")
    usable = np.flatnonzero((counts >= 2) & (variances > 0))
    if usable.size < 3:
        raise ValueError(
            f"{usable.size} judge column(s) have varying scores: a one-factor model needs at "
            "least three; use equal weights"
        )
    for note in notes:
        logger.info(note)
    return usable, tuple(notes)


def _fa_start(x: FloatArray) -> _Params:
    """Half of each judge's variance on the factor, signed by its agreement with the rest."""
    mu = np.nanmean(x, axis=0)
    sd = np.nanstd(x, axis=0)
    z = (x - mu) / sd
    total = np.nansum(z, axis=1)
    signs = np.ones(x.shape[1])
    for j in range(x.shape[1]):
        own = np.nan_to_num(z[:, j])
        rest = total - own
        if float(np.dot(own, rest)) < 0:
            signs[j] = -1.0
    return _Params(mu=mu, lam=signs * sd * math.sqrt(0.5), psi=0.5 * sd**2)


def _fa_posterior(
    filled: FloatArray, observed: NDArray[np.bool_], p: _Params
) -> tuple[FloatArray, FloatArray]:
    precision = 1.0 + observed @ (p.lam**2 / p.psi)
    weighted = ((filled - p.mu) * observed) @ (p.lam / p.psi)
    var: FloatArray = 1.0 / precision
    return weighted * var, var


def _fa_m_step(
    filled: FloatArray,
    observed: NDArray[np.bool_],
    mean: FloatArray,
    var: FloatArray,
    floor: FloatArray,
) -> _Params:
    """Per judge, regress its scores on the posterior quality (expected sufficient stats)."""
    obs = observed.astype(np.float64)
    n = obs.sum(axis=0)
    s_m = mean @ obs
    s_mm = (mean**2 + var) @ obs
    s_x = filled.sum(axis=0)
    s_xm = mean @ filled
    det = n * s_mm - s_m**2
    lam = (n * s_xm - s_m * s_x) / det
    mu = (s_x - lam * s_m) / n
    resid = (filled - mu - np.outer(mean, lam)) * obs
    psi = ((resid**2).sum(axis=0) + lam**2 * (var @ obs)) / n
    return _Params(mu=mu, lam=lam, psi=np.maximum(psi, floor))


def _fa_log_likelihood(filled: FloatArray, observed: NDArray[np.bool_], p: _Params) -> float:
    """Marginal log-likelihood of the observed scores, row by row, in closed form.

    Row covariance ``lambda lambda' + Psi`` over its observed judges: the determinant lemma
    and Woodbury's identity keep it O(judges) per row.
    """
    obs = observed.astype(np.float64)
    r = (filled - p.mu) * obs
    precision = 1.0 + obs @ (p.lam**2 / p.psi)
    log_det = obs @ np.log(p.psi) + np.log(precision)
    quad = (r**2) @ (1.0 / p.psi) - ((r @ (p.lam / p.psi)) ** 2) / precision
    n_obs = obs.sum(axis=1)
    return float(-0.5 * (n_obs * math.log(2 * math.pi) + log_det + quad).sum())


def _factor_fit(
    n_judges: int,
    usable: NDArray[np.intp],
    params: _Params,
    data: tuple[FloatArray, NDArray[np.bool_]],
) -> dict[str, FloatArray]:
    """The estimates on every judge column (NaN for those left out), signs fixed."""
    sign = -1.0 if params.lam.sum() < 0 else 1.0
    params = _Params(mu=params.mu, lam=sign * params.lam, psi=params.psi)
    scores, _ = _fa_posterior(*data, params)
    full = np.full((3, n_judges), np.nan)
    full[0, usable], full[1, usable], full[2, usable] = params.mu, params.lam, params.psi
    reliability = full[1] / np.sqrt(full[1] ** 2 + full[2])
    return {
        "means": full[0],
        "loadings": full[1],
        "noise": full[2],
        "reliability": reliability,
        "factor_scores": scores,
    }


# --- weights ---------------------------------------------------------------------------


def reliability_weights(reliability: NDArray[np.floating]) -> FloatArray | None:
    """Weights from reliabilities: ``max(0, reliability)``, NaN as 0.

    A judge no better than chance, or worse, gets no say. Returns None when every weight is
    0, so that the caller falls back to equal weights and says so rather than dividing by
    zero or silently muting the whole panel.
    """
    r = np.asarray(reliability, dtype=np.float64)
    weights: FloatArray = np.where(np.isnan(r), 0.0, np.maximum(r, 0.0))
    if not (weights > 0).any():
        logger.info("no judge has a positive reliability: use equal weights")
        return None
    return weights
