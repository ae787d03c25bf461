"""The engine behind :func:`debate.stats.krippendorff_alpha` (formulas and costs there).

Private: inputs arrive as a float matrix (raters x units, NaN missing) from :func:`prepare`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from debate.stats._plain import LEVELS

SMALL_DOMAIN = 32
"""Up to this many distinct values, nominal/ordinal/ratio use the V x V coincidence matrix."""
_BLOCK = 65536
"""Units per block: passes over the data hold one block of temporaries, not a copy."""

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

# --- input ------------------------------------------------------------------------------


def is_missing(value: Any) -> bool:
    """``None`` or a float NaN: a rating that was not given."""
    if value is None:
        return True
    return isinstance(value, float | np.floating) and bool(np.isnan(value))


def is_number(value: Any) -> bool:
    """A real number (booleans are labels here, not numbers)."""
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)


def _codes(flat: NDArray[Any], value_domain: Sequence[Any] | None) -> FloatArray:
    """Labels to 0..V-1 (order of value_domain, else sorted); missing to NaN."""
    missing = np.fromiter((is_missing(v) for v in flat), dtype=bool, count=flat.size)
    present = flat[~missing]
    if value_domain is not None:
        index = {v: i for i, v in enumerate(value_domain)}
        unknown = next((v for v in present if v not in index), None)
        if unknown is not None:
            raise ValueError(f"value {unknown!r} is not in value_domain; add it to the list")
    else:
        try:
            ordered = sorted(set(present.tolist()))
        except TypeError as exc:
            raise ValueError("labels of mixed types cannot be ordered; pass value_domain") from exc
        index = {v: i for i, v in enumerate(ordered)}
    out = np.full(flat.shape, np.nan)
    out[~missing] = np.fromiter((index[v] for v in present), dtype=np.float64, count=present.size)
    return out


def prepare(data: Any, level: str, value_domain: Sequence[Any] | None) -> FloatArray:
    """A float matrix (raters x units, NaN missing) whose values carry the level's meaning.

    Numbers stay numbers; labels (and numbers with a ``value_domain``) become codes
    0..V-1 in the domain's order, which is all that nominal and ordinal alpha use.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}; got {level!r}")
    matrix = data if isinstance(data, np.ndarray) else np.asarray(data, dtype=object)
    if matrix.ndim != 2:
        raise ValueError(
            f"reliability_data must be 2-D (raters x units); got {matrix.ndim} dimension(s)"
        )
    if matrix.dtype.kind in "fiub":
        numeric = True
    else:
        numeric = all(is_missing(v) or is_number(v) for v in matrix.ravel())
    if value_domain is not None and level in ("nominal", "ordinal"):
        return _codes(matrix.ravel(), value_domain).reshape(matrix.shape)
    if not numeric:
        if level in ("interval", "ratio"):
            raise ValueError(
                f"level {level!r} needs numbers; use level='nominal' for labels, or "
                "level='ordinal' with an ordered value_domain"
            )
        if level == "ordinal":
            raise ValueError(
                "ordinal labels need their order: pass value_domain, e.g. ['low', 'mid', 'high']"
            )
        return _codes(matrix.ravel(), None).reshape(matrix.shape)
    values = np.asarray(matrix, dtype=np.float64)
    if np.isinf(values).any():
        raise ValueError("reliability_data contains an infinite value; use NaN for missing")
    if value_domain is not None:  # interval/ratio: the domain only has to contain the values
        allowed = np.asarray(value_domain, dtype=np.float64)
        outside = values[~np.isnan(values) & ~np.isin(values, allowed)]
        if outside.size:
            raise ValueError(f"value {outside[0]:g} is not in value_domain; add it to the list")
    if level == "ratio" and (values[~np.isnan(values)] < 0).any():
        raise ValueError("ratio data must be non-negative (a ratio scale has a true zero)")
    return values


def _blocks(units: int, size: int = _BLOCK) -> Iterator[slice]:
    for start in range(0, units, size):
        yield slice(start, min(start + size, units))


def _pairable_block(x: FloatArray) -> tuple[BoolArray, NDArray[np.intp]]:
    """Mask of pairable values in a block, and the number of values per unit."""
    finite = ~np.isnan(x)
    m = finite.sum(axis=0)
    return finite & (m >= 2), m


def _alpha_value(n: float, observed: float, expected: float) -> float:
    """``1 - (n - 1) * observed / expected`` (observed = n D_o, expected = n(n-1) D_e)."""
    if n < 2 or not expected > 0:
        return math.nan
    return float(1.0 - (n - 1.0) * observed / expected)


# --- interval: closed-form sums ----------------------------------------------------------


class _UnitMoments(NamedTuple):
    """Per pairable unit: number of values, mean (shifted), sum of squared deviations."""

    m: FloatArray
    mean: FloatArray
    ss: FloatArray


def _unit_moments(values: FloatArray) -> _UnitMoments:
    """Moments of every pairable unit, shifted by one data value so equal data stay exact."""
    parts: list[tuple[FloatArray, FloatArray, FloatArray]] = []
    ref: float | None = None
    for block in _blocks(values.shape[1]):
        x = values[:, block]
        keep, m = _pairable_block(x)
        units = m >= 2
        if not units.any():
            continue
        x, keep = x[:, units], keep[:, units]
        if ref is None:
            ref = float(x[keep][0])
        shifted = np.where(keep, x - ref, 0.0)
        mu = m[units].astype(np.float64)
        mean = shifted.sum(axis=0) / mu
        dev = np.where(keep, shifted - mean, 0.0)
        parts.append((mu, mean, np.einsum("ij,ij->j", dev, dev)))
    if not parts:
        empty = np.zeros(0)
        return _UnitMoments(empty, empty, empty)
    m_all, mean_all, ss_all = (np.concatenate(p) for p in zip(*parts, strict=True))
    return _UnitMoments(m_all, mean_all, ss_all)


def _alpha_from_moments(mom: _UnitMoments, weights: FloatArray | None = None) -> float:
    """Interval alpha from unit moments; ``weights`` counts each unit (bootstrap draws)."""
    wm = mom.m if weights is None else mom.m * weights
    n = float(wm.sum())
    if n < 2:
        return math.nan
    wss = mom.ss if weights is None else mom.ss * weights
    observed = float((2.0 * wm * mom.ss / (mom.m - 1.0)).sum())  # n * D_o
    grand = float((wm * mom.mean).sum()) / n
    pooled = float(wss.sum()) + float((wm * (mom.mean - grand) ** 2).sum())
    return _alpha_value(n, observed, 2.0 * n * pooled)


def _interval_alpha(values: FloatArray) -> float:
    return _alpha_from_moments(_unit_moments(values))


# --- few distinct values: the coincidence matrix ------------------------------------------


def _small_domain(values: FloatArray) -> FloatArray | None:
    """The sorted distinct values if there are at most SMALL_DOMAIN of them, else None."""
    seen = np.zeros(0)
    for block in _blocks(values.shape[1]):
        x = values[:, block]
        x = x[~np.isnan(x)]
        if x.size == 0:
            continue
        low, high = float(x.min()), float(x.max())
        if high - low < 4 * SMALL_DOMAIN and bool((x == np.floor(x)).all()):
            present = np.bincount((x - low).astype(np.intp))  # integers: no sort
            distinct = low + np.flatnonzero(present).astype(np.float64)
        else:
            distinct = np.unique(x[: 64 * SMALL_DOMAIN])
            if distinct.size <= SMALL_DOMAIN:
                distinct = np.unique(x)
        seen = np.union1d(seen, distinct)
        if seen.size > SMALL_DOMAIN:
            return None
    return seen


def _encode(x: FloatArray, domain: FloatArray) -> NDArray[np.intp]:
    """Index of each value in the sorted domain (every value of ``x`` is in it)."""
    low, span = domain[0], domain[-1] - domain[0]
    if span < 4 * SMALL_DOMAIN and bool((domain == np.floor(domain)).all()):
        lookup = np.zeros(int(span) + 1, dtype=np.intp)  # integers: a table, not a search
        lookup[(domain - low).astype(np.intp)] = np.arange(domain.size)
        out: NDArray[np.intp] = lookup[(x - low).astype(np.intp)]
        return out
    return np.searchsorted(domain, x)


def _unit_counts(x: FloatArray, domain: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Per pairable unit of a block: value counts (units x V) and the weight 1/(m_u - 1)."""
    keep, m = _pairable_block(x)
    units = m >= 2
    x, keep = x[:, units], keep[:, units]
    v, width = domain.size, int(units.sum())
    codes = _encode(np.where(keep, x, domain[0]), domain)
    codes += np.arange(width, dtype=codes.dtype) * v
    counts = np.bincount(codes[keep], minlength=width * v).reshape(width, v)
    return counts.astype(np.float64), np.reciprocal(m[units] - 1.0, dtype=np.float64)


def _coincidences(counts: FloatArray, g: FloatArray) -> FloatArray:
    r""":math:`o = C^T \mathrm{diag}(g) C - \mathrm{diag}(C^T g)`: pairs without self-pairs."""
    weighted = counts * g[:, None]
    o: FloatArray = counts.T @ weighted
    o[np.diag_indices_from(o)] -= weighted.sum(axis=0)
    return o


def _metric(level: str, domain: FloatArray, marginals: FloatArray) -> FloatArray:
    """Squared distance delta^2 between the domain's values (V x V)."""
    if level == "nominal":
        return 1.0 - np.eye(domain.size)
    if level == "ordinal":
        ranks = np.cumsum(marginals) - marginals / 2.0
        return (ranks[:, None] - ranks[None, :]) ** 2
    if level == "ratio":
        return _ratio_delta(domain[:, None], domain[None, :])
    return (domain[:, None] - domain[None, :]) ** 2


def _alpha_from_coincidences(o: FloatArray, level: str, domain: FloatArray) -> float:
    marginals = o.sum(axis=1)
    delta = _metric(level, domain, marginals)
    return _alpha_value(
        float(marginals.sum()), float((o * delta).sum()), float(marginals @ delta @ marginals)
    )


def _coincidence_alpha(values: FloatArray, level: str, domain: FloatArray) -> float:
    o = np.zeros((domain.size, domain.size))
    for block in _blocks(values.shape[1]):
        o += _coincidences(*_unit_counts(values[:, block], domain))
    return _alpha_from_coincidences(o, level, domain)


# --- many distinct values: nominal, ordinal, ratio ----------------------------------------


def _pooled(values: FloatArray) -> tuple[FloatArray, BoolArray]:
    """All pairable values (one copy), and their mask."""
    finite = ~np.isnan(values)
    mask = finite & (finite.sum(axis=0) >= 2)
    return values[mask], mask


def _midranks(values: FloatArray) -> FloatArray:
    """Each pairable value replaced by its mid-rank among all pairable values; NaN elsewhere."""
    pooled, mask = _pooled(values)
    _, inverse, counts = np.unique(pooled, return_inverse=True, return_counts=True)
    ranks = np.cumsum(counts) - counts / 2.0
    out = np.full(values.shape, np.nan)
    out[mask] = ranks[inverse.ravel()]
    return out


def _nominal_alpha(values: FloatArray) -> float:
    """Nominal alpha from runs of equal values (columns sorted; pooled values sorted)."""
    observed = 0.0
    for block in _blocks(values.shape[1]):
        x = np.sort(values[:, block], axis=0)  # NaN sorts last
        m = (~np.isnan(x)).sum(axis=0)
        run = np.zeros(x.shape[1])
        equal_pairs = np.zeros(x.shape[1])  # sum over runs of C(length, 2)
        for i in range(1, x.shape[0]):
            run = np.where(x[i] == x[i - 1], run + 1.0, 0.0)
            equal_pairs += run
        units = m >= 2
        mu = m[units].astype(np.float64)
        observed += float((mu - 2.0 * equal_pairs[units] / (mu - 1.0)).sum())
    pooled = np.sort(_pooled(values)[0])
    n = float(pooled.size)
    if pooled.size < 2:
        return math.nan
    starts = np.flatnonzero(np.r_[True, pooled[1:] != pooled[:-1]])
    runs = np.diff(np.r_[starts, pooled.size]).astype(np.float64)
    return _alpha_value(n, observed, n * n - float(runs @ runs))


def _ratio_delta(a: FloatArray, b: FloatArray) -> FloatArray:
    total = a + b
    with np.errstate(invalid="ignore", divide="ignore"):
        d = np.where(total == 0, 0.0, (a - b) / np.where(total == 0, 1.0, total))
    out: FloatArray = d * d
    return out


def _ratio_alpha(values: FloatArray) -> float:
    """Ratio alpha for many distinct values: rater pairs per unit, distinct-value pairs."""
    raters = values.shape[0]
    observed = 0.0
    for block in _blocks(values.shape[1], max(1, 2**22 // (raters * raters))):
        x = values[:, block]
        _, m = _pairable_block(x)
        units = m >= 2
        x = x[:, units]
        d = _ratio_delta(x[:, None, :], x[None, :, :])  # NaN where either value is missing
        observed += float((np.nansum(d, axis=(0, 1)) / (m[units] - 1.0)).sum())
    distinct, counts_int = np.unique(_pooled(values)[0], return_counts=True)
    counts = counts_int.astype(np.float64)
    expected = 0.0
    step = max(1, 2**22 // max(distinct.size, 1))
    for start in range(0, distinct.size, step):
        part = distinct[start : start + step]
        expected += float(
            counts[start : start + step] @ _ratio_delta(part[:, None], distinct) @ counts
        )
    return _alpha_value(float(counts.sum()), observed, expected)


def alpha_of(values: FloatArray, level: str) -> float:
    """Alpha of a prepared matrix, by the cheapest exact route for the level and data."""
    if level == "interval":
        return _interval_alpha(values)
    domain = _small_domain(values)
    if domain is not None:
        return _coincidence_alpha(values, level, domain) if domain.size else math.nan
    if level == "ordinal":
        return _interval_alpha(_midranks(values))
    if level == "nominal":
        return _nominal_alpha(values)
    return _ratio_alpha(values)


def replicator(values: FloatArray, level: str) -> Callable[[NDArray[np.int64]], float]:
    """Alpha of the data with units resampled by index, from statistics computed once.

    Resampling units only multiplies each unit's contribution by how often it was drawn,
    so interval alpha needs only per-unit moments, and few-valued data per-unit counts.
    """
    units = values.shape[1]
    if level == "interval":
        moments = _unit_moments(values)
        pairable = np.flatnonzero((~np.isnan(values)).sum(axis=0) >= 2)

        def interval(index: NDArray[np.int64]) -> float:
            weights = np.bincount(index, minlength=units)[pairable].astype(np.float64)
            return _alpha_from_moments(moments, weights)

        return interval
    domain = _small_domain(values)
    if domain is not None and domain.size:
        counts, g = _unit_counts(values, domain)
        pairable = np.flatnonzero((~np.isnan(values)).sum(axis=0) >= 2)

        def coded(index: NDArray[np.int64]) -> float:
            weights = np.bincount(index, minlength=units)[pairable]
            return _alpha_from_coincidences(_coincidences(counts, g * weights), level, domain)

        return coded
    return lambda index: alpha_of(values[:, index], level)
