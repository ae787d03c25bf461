"""The judges' error correlation against people, and the independent votes it leaves.

Judges that share a model make the same mistakes, so the validity report says how often
they are wrong together: each judge's error on a labelled unit is 1 where its call differs
from people's majority and 0 where it matches; the Pearson correlation of two judges'
errors over the units every judge called (an unscored judge's units are left out, never
filled in) is their error correlation, and the effective number of independent votes is
the design-effect number of :mod:`debate.stats._effective`. Its interval resamples items
(every unit of an item together), as every other interval of the report does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from debate.judgments._resample import ItemBootstrap
from debate.records import NO_CALL, DecisionFrame, JudgeCorrelation
from debate.stats import ESTIMATOR, clusters, correlation_batch, effective_votes

MAX_REPLICATES = 200
"""Replicates of the interval: one judges x judges matrix each, over every unit."""


def error_correlation(
    frame: DecisionFrame, *, n_boot: int, seed: int, level: float = 0.95
) -> JudgeCorrelation | None:
    """The judges' error correlation on ``frame``; None with fewer than two judges."""
    names = list(frame.judges)
    if len(names) < 2:
        return None
    calls = np.stack([frame.judges[n].call for n in names])
    complete = (frame.label != NO_CALL) & (calls != NO_CALL).all(axis=0)
    errors = (calls[:, complete] != frame.label[complete]).astype(np.float64)
    boot = _resampling(len(frame.items), n_boot, seed)
    return _report(names, errors, frame.group[complete], boot, level)


def call_error_correlation(
    calls: Mapping[str, Sequence[str | None]],
    truth: Sequence[str | None],
    *,
    n_boot: int = MAX_REPLICATES,
    seed: int = 0,
    level: float = 0.95,
) -> JudgeCorrelation | None:
    """The same from each judge's calls per item (``debate calibrate``): one unit an item.

    Items without a truth, or where a judge gave no call, are left out.
    """
    names = list(calls)
    if len(names) < 2:
        return None
    complete = [
        k
        for k, t in enumerate(truth)
        if t is not None and all(calls[n][k] is not None for n in names)
    ]
    errors = np.array(
        [[float(calls[n][k] != truth[k]) for k in complete] for n in names], dtype=np.float64
    ).reshape(len(names), len(complete))
    group = np.arange(len(complete), dtype=np.int32)
    return _report(names, errors, group, _resampling(len(complete), n_boot, seed), level)


def _resampling(n_items: int, n_boot: int, seed: int) -> ItemBootstrap | None:
    """The items' resampling for the interval (at most :data:`MAX_REPLICATES`); None if none."""
    return ItemBootstrap(n_items, min(n_boot, MAX_REPLICATES), seed) if n_items else None


def _report(
    names: list[str],
    errors: NDArray[np.float64],
    group: NDArray[np.int32],
    boot: ItemBootstrap | None,
    level: float,
) -> JudgeCorrelation:
    corr = correlation_batch(errors[None])[0]
    found = float(effective_votes(corr[None])[0])
    interval = None if boot is None else _interval(errors, group, boot, level)
    defined = bool(np.isfinite(corr).all())
    groups = clusters(corr, names) if defined else []
    return JudgeCorrelation(
        kind="error",
        units=int(errors.shape[1]),
        correlation={
            a: {b: _num(corr[i, k]) for k, b in enumerate(names) if k != i}
            for i, a in enumerate(names)
        },
        effective_votes=_num(found),
        effective_votes_ci=interval,
        method=ESTIMATOR,
        clusters=groups,
        warning=_warning(found, len(names), groups) if defined else None,
    )


def _num(value: float) -> float | None:
    return round(float(value), 9) if np.isfinite(value) else None


def _interval(
    errors: NDArray[np.float64], group: NDArray[np.int32], boot: ItemBootstrap, level: float
) -> tuple[float, float] | None:
    """The percentile interval of the effective votes, items resampled (weighted Pearson)."""
    if errors.shape[1] < 3:
        return None
    weights = boot.counts[:, group].astype(np.float64)  # replicates x units
    total = weights.sum(axis=1)
    mean = weights @ errors.T / total[:, None]  # replicates x judges
    judges = errors.shape[0]
    pairs = (errors[:, None, :] * errors[None, :, :]).reshape(judges * judges, -1)
    second = (weights @ pairs.T / total[:, None]).reshape(-1, judges, judges)
    cov = second - mean[:, :, None] * mean[:, None, :]
    sd = np.sqrt(np.clip(np.diagonal(cov, axis1=1, axis2=2), 0.0, None))
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = cov / (sd[:, :, None] * sd[:, None, :])
    flat = sd <= 1e-12
    # Two judges that never vary are copies when they are equal (both never wrong).
    same = np.abs(mean[:, :, None] - mean[:, None, :]) <= 1e-12
    corr = np.where(flat[:, :, None] | flat[:, None, :], np.where(same, 1.0, 0.0), corr)
    corr[:, np.arange(judges), np.arange(judges)] = 1.0
    found = effective_votes(np.clip(corr, -1.0, 1.0))
    kept = found[np.isfinite(found)]
    if kept.size == 0:
        return None
    tail = (1 - level) / 2
    low, high = np.quantile(kept, [tail, 1 - tail])
    return round(float(low), 9), round(float(high), 9)


def _warning(votes: float, judges: int, groups: list[list[str]]) -> str | None:
    if votes >= 2:
        return None
    who = "; ".join(", ".join(g) for g in groups) or "the judges"
    return (
        f"the {judges} judges are worth {votes:.2f} independent votes (fewer than two): "
        f"{who} make the same mistakes (error correlation >= 0.9)"
    )
