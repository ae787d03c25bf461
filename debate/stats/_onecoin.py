"""Judge accuracy on two-way calls from agreement alone: the one-coin latent-class model.

Pairwise verdicts are A or B (a tie, and a judge whose two readings disagree, carry no
preference and are left out as missing). Each item has a hidden true answer, A with
probability ``pi``; judge ``j`` gives the true answer with probability ``p_j`` whatever it
is, and the wrong one otherwise (Dawid and Skene's model with one "coin" per judge). EM
alternates each item's posterior with each judge's accuracy.

Why one coin and not a 2 x 2 confusion matrix per judge: which answer is listed first is an
accident of the table, and both orders are already combined (a judge that follows the
position is a tie, so missing here), so a judge's error rate has no reason to depend on
whether the truth is A or B. One parameter per judge halves the variance of the fit on a
few hundred items, and it is the parameter a log-odds weight needs (``log(p / (1 - p))`` is
the weight under which a weighted vote is the Bayes rule for this model). And the model is
symmetric in A and B: a table with A and B relabelled gives the same accuracies, bit for bit
(the posterior is carried as log-odds, whose arithmetic is exactly antisymmetric).

Arrays only, no judge names: the caller maps columns to judges.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

logger = logging.getLogger(__name__)

FloatArray = NDArray[np.float64]
SMOOTHING = 0.5
"""Pseudo-count of agreements and of disagreements added to every judge's tally (a
Beta(1.5, 1.5) prior on its accuracy, pulling toward 0.5), and of items to each answer of the
prior. A judge that agreed with the posterior on every one of a few items is not made
certain (accuracy 1 is an infinite log-odds weight); half an item is small against the
hundreds a fit rests on."""
DEFAULT_TOLERANCE = 1e-8
"""EM stops when the log-likelihood changes by at most this share of its size."""
DEFAULT_MAX_ITER = 500
"""EM iterations at most; a fit that needs more is returned with ``converged`` False."""
MIN_JUDGES = 3
"""Judges with calls the model needs: with two, agreement gives one equation in two
accuracies (``p1 p2 + (1 - p1)(1 - p2)``), so any pair on that curve fits alike."""


@dataclass(frozen=True)
class OneCoinFit:
    """A fitted one-coin model."""

    prior: float
    """P(the true answer is the first option, A)."""
    accuracy: FloatArray
    """Per judge, P(its call is the true answer); NaN for a judge with no call."""
    reliability: FloatArray
    """Per judge, ``2 accuracy - 1``: 0 for a judge at chance, below 0 for one that prefers
    the wrong answer; NaN for a judge with no call."""
    log_odds: FloatArray
    """Per item, the posterior log-odds of A against B (the prior's where no judge called)."""
    converged: bool
    """The log-likelihood changed by at most ``tolerance`` of its size before ``max_iter``."""
    iterations: int
    log_likelihood: float
    change: float
    """The last iteration's relative change of the log-likelihood."""
    tolerance: float
    notes: tuple[str, ...] = ()
    """What the fit could not estimate (judges without calls), by column index."""

    @property
    def posterior(self) -> FloatArray:
        """Per item, P(the true answer is A | every call on the item)."""
        from scipy.special import expit

        probability: FloatArray = expit(self.log_odds)
        return probability

    def flipped(self) -> OneCoinFit:
        """The mirror solution: every accuracy ``1 - p``, every posterior the other answer.

        It has exactly the same likelihood (the model cannot tell a panel of accurate judges
        from the same panel reading every item the other way round), so which of the two
        is meant is a convention the caller states.
        """
        accuracy = 1.0 - self.accuracy
        return replace(
            self,
            prior=1.0 - self.prior,
            accuracy=accuracy,
            reliability=2.0 * accuracy - 1.0,
            log_odds=-self.log_odds,
        )


def one_coin(
    calls: NDArray[np.integer],
    *,
    max_iter: int = DEFAULT_MAX_ITER,
    tol: float = DEFAULT_TOLERANCE,
    start: FloatArray | None = None,
) -> OneCoinFit:
    """Fit each judge's accuracy on two-way calls and each item's answer (EM).

    Args:
        calls: ``items x judges``: 0 for A, 1 for B, -1 where the judge gave no A/B call.
        max_iter: EM iterations at most.
        tol: stop when the log-likelihood moves by at most ``tol`` times its size.
        start: per item, the log-odds of A to start from; None starts from the calls'
            majority (``log((n_A + 1/2) / (n_B + 1/2))``), which puts the answer where most
            judges put it.

    Returns:
        The fit, with whether it converged; never a fit with accuracies silently flipped.

    Raises:
        ValueError: not 2-D, a code other than -1, 0, 1, fewer than three judges with calls.
    """
    x = _check_calls(calls)
    says_a = (x == 0).astype(np.float64)
    says_b = (x == 1).astype(np.float64)
    called = np.asarray((x >= 0).any(axis=1))
    has_calls = np.asarray((x >= 0).any(axis=0))
    trace = _em(says_a, says_b, _start(says_a, says_b, start), called, max_iter, tol)
    # The accuracies and prior that the returned posterior was computed from.
    prior_log_odds, accuracy = _m_step(says_a, says_b, trace.log_odds, called)
    from scipy.special import expit

    accuracy = np.where(has_calls, accuracy, np.nan)
    return OneCoinFit(
        prior=float(expit(prior_log_odds)),
        accuracy=accuracy,
        reliability=2.0 * accuracy - 1.0,
        log_odds=trace.log_odds,
        converged=trace.converged,
        iterations=trace.iterations,
        log_likelihood=float(trace.log_likelihood),
        change=float(trace.change),
        tolerance=tol,
        notes=tuple(
            f"judge column {j} gave no A/B call: its accuracy is undefined (NaN, weight 0)"
            for j in np.flatnonzero(~has_calls)
        ),
    )


def _start(says_a: FloatArray, says_b: FloatArray, start: FloatArray | None) -> FloatArray:
    """The log-odds EM starts from: the given ones, or the calls' smoothed majority."""
    if start is None:
        n_a, n_b = says_a.sum(axis=1), says_b.sum(axis=1)
        majority: FloatArray = np.log(n_a + 0.5) - np.log(n_b + 0.5)
        return majority
    log_odds = np.asarray(start, dtype=np.float64).copy()
    if log_odds.shape != (says_a.shape[0],):
        raise ValueError(f"start has shape {log_odds.shape}; give one log-odds per item")
    return log_odds


class _Trace(NamedTuple):
    """Where EM stopped: the last posterior, and whether it stopped by converging."""

    log_odds: FloatArray
    log_likelihood: float
    change: float
    iterations: int
    converged: bool


def _em(
    says_a: FloatArray,
    says_b: FloatArray,
    log_odds: FloatArray,
    called: NDArray[np.bool_],
    max_iter: int,
    tol: float,
) -> _Trace:
    """Alternate the M and E steps until the log-likelihood settles (a warning if not)."""
    previous = -math.inf
    log_likelihood, change, iterations, converged = -math.inf, math.inf, 0, False
    for iterations in range(1, max_iter + 1):  # noqa: B007 (read after the loop)
        prior_log_odds, accuracy = _m_step(says_a, says_b, log_odds, called)
        log_odds, log_likelihood = _e_step(says_a, says_b, prior_log_odds, accuracy, called)
        change = abs(log_likelihood - previous) / (1.0 + abs(log_likelihood))
        if change <= tol:
            converged = True
            break
        previous = log_likelihood
    if not converged:
        logger.warning(
            "the one-coin model did not converge in %d iterations (last change %.2g > %.2g)",
            max_iter,
            change,
            tol,
        )
    return _Trace(log_odds, log_likelihood, change, iterations, converged)


def _check_calls(calls: NDArray[np.integer]) -> NDArray[np.int64]:
    x = np.asarray(calls)
    if x.ndim != 2:
        raise ValueError(f"calls must be a 2-D items x judges array; got {x.ndim} dimension(s)")
    if x.size and not np.issubdtype(x.dtype, np.integer):
        raise ValueError(f"calls must be integer codes (0 A, 1 B, -1 none); got dtype {x.dtype}")
    x = x.astype(np.int64)
    bad = (x < -1) | (x > 1)
    if bad.any():
        row, col = map(int, np.argwhere(bad)[0])
        raise ValueError(f"calls[{row}, {col}] is {x[row, col]}: codes are 0 A, 1 B, -1 none")
    judges = int((x >= 0).any(axis=0).sum())
    if judges < MIN_JUDGES:
        raise ValueError(
            f"{judges} judge(s) gave an A or B call: the one-coin model needs at least "
            f"{MIN_JUDGES} to tell their accuracies apart; use equal weights"
        )
    return x


def _m_step(
    says_a: FloatArray, says_b: FloatArray, log_odds: FloatArray, called: NDArray[np.bool_]
) -> tuple[float, FloatArray]:
    """The prior's log-odds and each judge's accuracy, from the items' posteriors.

    ``P(A)`` and ``P(B)`` are each computed from the log-odds directly (never one as
    ``1 -`` the other), so that relabelled calls give the same numbers exactly.
    """
    from scipy.special import expit

    p_a, p_b = expit(log_odds), expit(-log_odds)
    prior = float(np.log(p_a[called].sum() + SMOOTHING) - np.log(p_b[called].sum() + SMOOTHING))
    agree = p_a @ says_a + p_b @ says_b
    disagree = p_b @ says_a + p_a @ says_b
    accuracy: FloatArray = (agree + SMOOTHING) / (agree + disagree + 2 * SMOOTHING)
    return prior, accuracy


def _e_step(
    says_a: FloatArray,
    says_b: FloatArray,
    prior_log_odds: float,
    accuracy: FloatArray,
    called: NDArray[np.bool_],
) -> tuple[FloatArray, float]:
    """Each item's posterior log-odds of A, and the log-likelihood of every call."""
    from scipy.special import log_expit

    right, wrong = np.log(accuracy), np.log1p(-accuracy)
    joint_a = log_expit(prior_log_odds) + says_a @ right + says_b @ wrong
    joint_b = log_expit(-prior_log_odds) + says_b @ right + says_a @ wrong
    log_odds: FloatArray = joint_a - joint_b
    log_likelihood = float(np.logaddexp(joint_a, joint_b)[called].sum())
    return log_odds, log_likelihood
