r"""Inter-rater agreement: Krippendorff's alpha (all four levels) and Fleiss' kappa.

Krippendorff's alpha follows the coincidence-matrix definition (Krippendorff 2011,
"Computing Krippendorff's alpha-reliability"). Only *pairable* values count: values in units
(columns) that at least two raters rated. With :math:`m_u` values in unit :math:`u`,
:math:`n = \sum_u m_u` pairable values and :math:`n_c` of them equal to :math:`c`,

.. math::

    D_o = \frac{1}{n} \sum_u \frac{1}{m_u - 1} \sum_{i \ne j \in u} \delta^2(x_i, x_j),
    \qquad
    D_e = \frac{1}{n(n-1)} \sum_{c, k} n_c n_k \, \delta^2(c, k),
    \qquad
    \alpha = 1 - D_o / D_e .

Each unit is weighted by :math:`1/(m_u - 1)`, self-pairs never count, and alpha is ``nan``
where it is undefined (no pairable values, or :math:`D_e = 0`): never a made-up 1.0.

The sums are computed without a :math:`V \times V` matrix wherever the metric allows it,
so time and memory are linear in the number of ratings:

- interval: :math:`\sum_{i \ne j}(x_i - x_j)^2 = 2(m \sum x^2 - (\sum x)^2)` per unit and
  over all pairable values;
- ordinal: Krippendorff's ordinal distance between values :math:`c < k` is
  :math:`(\sum_{g=c}^{k} n_g - (n_c + n_k)/2)^2 = (r_k - r_c)^2` with the mid-rank
  :math:`r_c = \sum_{g<c} n_g + n_c/2`, so ordinal alpha is interval alpha on mid-ranks;
- nominal: :math:`\sum_{i \ne j}[x_i \ne x_j] = m^2 - \sum_c n_{uc}^2` per unit;
- ratio: :math:`((c-k)/(c+k))^2` does not separate, so :math:`D_o` runs over rater pairs
  (:math:`O(R^2 U)`) and :math:`D_e` over pairs of *distinct* values (:math:`O(V^2)`, in
  chunks); with many distinct ratio values this is the one quadratic case.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

Level = Literal["nominal", "ordinal", "interval", "ratio"]
LEVELS: tuple[Level, ...] = ("nominal", "ordinal", "interval", "ratio")
_CHUNK = 2048
_CHUNK_UNITS = 65536

FloatArray = NDArray[np.float64]


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float | np.floating):
        return bool(np.isnan(value))
    return False


def _as_matrix(data: Any) -> NDArray[Any]:
    matrix = np.asarray(data, dtype=object) if not isinstance(data, np.ndarray) else data
    if matrix.ndim != 2:
        raise ValueError(
            f"reliability_data must be 2-D (raters x units); got {matrix.ndim} dimension(s)"
        )
    return matrix


def _numeric(matrix: NDArray[Any], level: str) -> FloatArray:
    try:
        values = np.asarray(matrix, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"level {level!r} needs numbers; use level='nominal' for labels, or "
            "level='ordinal' with an ordered value_domain"
        ) from exc
    if np.isinf(values).any():
        raise ValueError("reliability_data contains an infinite value")
    return values


def _codes(matrix: NDArray[Any], value_domain: Sequence[Any] | None) -> FloatArray:
    """Map labels to 0..V-1 (order of value_domain, else sorted), missing to NaN."""
    flat = matrix.ravel()
    present = [v for v in flat if not _is_missing(v)]
    if value_domain is not None:
        index = {v: i for i, v in enumerate(value_domain)}
        unknown = [v for v in present if v not in index]
        if unknown:
            raise ValueError(f"value {unknown[0]!r} is not in value_domain")
    else:
        try:
            ordered = sorted(set(present))
        except TypeError as exc:
            raise ValueError("labels of mixed types cannot be ordered; pass value_domain") from exc
        index = {v: i for i, v in enumerate(ordered)}
    out = np.full(flat.shape, np.nan)
    for i, v in enumerate(flat):
        if not _is_missing(v):
            out[i] = index[v]
    return out.reshape(matrix.shape)


def _prepare(data: ArrayLike, level: str, value_domain: Sequence[Any] | None) -> FloatArray:
    """Numeric matrix (raters x units) whose values carry the level's meaning."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}; got {level!r}")
    if isinstance(data, np.ndarray) and data.dtype.kind in "fiub":
        matrix: NDArray[Any] = data
    else:
        matrix = _as_matrix(data)
    if matrix.ndim != 2:
        raise ValueError("reliability_data must be 2-D (raters x units)")
    numeric_ok = matrix.dtype.kind in "fiub" or all(
        _is_missing(v) or isinstance(v, int | float | np.integer | np.floating)
        for v in matrix.ravel()
    )
    if level in ("interval", "ratio"):
        if value_domain is not None:
            raise ValueError(f"value_domain is for nominal or ordinal data, not {level}")
        values = _numeric(matrix, level)
        if level == "ratio" and (values[~np.isnan(values)] < 0).any():
            raise ValueError("ratio data must be non-negative")
        return values
    if numeric_ok and value_domain is None:
        return _numeric(matrix, level)
    if level == "ordinal" and value_domain is None:
        raise ValueError("ordinal labels need an ordered value_domain, e.g. ['low', 'mid', 'high']")
    return _codes(matrix, value_domain)


def _chunks(units: int) -> list[slice]:
    """Column blocks: every pass below holds one block at a time, not a copy of the data."""
    return [slice(i, min(i + _CHUNK_UNITS, units)) for i in range(0, units, _CHUNK_UNITS)]


def _pairable(values: FloatArray) -> tuple[NDArray[np.bool_], NDArray[np.int64]]:
    """Mask of pairable values (rated, in a unit with two or more ratings), and m_u."""
    present = ~np.isnan(values)
    m = present.sum(axis=0)
    present &= m >= 2
    return present, np.where(m >= 2, m, 0)


Transform = Callable[[FloatArray], FloatArray]


def _interval_sums(
    values: FloatArray, present: NDArray[np.bool_], m: NDArray[np.int64], transform: Transform
) -> tuple[float, float, float]:
    """(n, D_o * n, D_e * n * (n-1)) for squared differences, in closed form, by blocks."""
    keep = m >= 2
    n = float(m[keep].sum())
    total = 0.0
    for block in _chunks(values.shape[1]):
        x = transform(values[:, block])
        total += float(x[present[:, block]].sum())
    # Centre on the pooled mean: alpha does not change, and the sums of squares below do
    # not lose precision to a large common offset.
    mean = total / n
    within = s1_total = s2_total = 0.0
    for block in _chunks(values.shape[1]):
        p = present[:, block]
        x = transform(values[:, block]) - mean
        x[~p] = 0.0
        s1 = x.sum(axis=0)
        np.square(x, out=x)
        s2 = x.sum(axis=0)
        k = keep[block]
        mk = m[block][k]
        within += float((2.0 * (mk * s2[k] - s1[k] * s1[k]) / (mk - 1)).sum())
        s1_total += float(s1[k].sum())
        s2_total += float(s2[k].sum())
    expected = 2.0 * (n * s2_total - s1_total * s1_total)
    return n, within, expected


def _distinct_counts(
    values: FloatArray, present: NDArray[np.bool_]
) -> tuple[FloatArray, NDArray[np.int64]]:
    """Distinct pairable values and how often each occurs, gathered block by block."""
    parts, counts = [], []
    for block in _chunks(values.shape[1]):
        d, c = np.unique(values[:, block][present[:, block]], return_counts=True)
        parts.append(d)
        counts.append(c)
    merged, inverse = np.unique(np.concatenate(parts), return_inverse=True)
    totals = np.bincount(inverse, weights=np.concatenate(counts).astype(np.float64))
    return merged, totals.astype(np.int64)


def _midrank_transform(values: FloatArray, present: NDArray[np.bool_]) -> Transform:
    """Map each value to its mid-rank among all pairable values (NaN for the rest)."""
    distinct, counts = _distinct_counts(values, present)
    ranks = np.cumsum(counts) - counts / 2.0

    def transform(x: FloatArray) -> FloatArray:
        index = np.clip(np.searchsorted(distinct, x), 0, len(distinct) - 1)
        out: FloatArray = ranks[index]
        return out

    return transform


def _nominal_sums(
    values: FloatArray, present: NDArray[np.bool_], m: NDArray[np.int64]
) -> tuple[float, float, float]:
    distinct, marginals = _distinct_counts(values, present)
    v = len(distinct)
    within = 0.0
    for block in _chunks(values.shape[1]):
        p = present[:, block]
        cols = np.nonzero(p)[1]
        codes = np.searchsorted(distinct, values[:, block][p])
        pairs, pair_counts = np.unique(cols * v + codes, return_counts=True)
        squares = np.bincount(
            pairs // v, weights=pair_counts.astype(np.float64) ** 2, minlength=p.shape[1]
        )
        mb = m[block].astype(np.float64)
        k = mb >= 2
        within += float(((mb[k] ** 2 - squares[k]) / (mb[k] - 1)).sum())
    n = float(m.sum())
    expected = n * n - float((marginals.astype(np.float64) ** 2).sum())
    return n, within, expected


def _ratio_delta(a: FloatArray, b: FloatArray) -> FloatArray:
    total = a + b
    with np.errstate(invalid="ignore", divide="ignore"):
        d = np.where(total == 0, 0.0, (a - b) / np.where(total == 0, 1.0, total))
    return d * d


def _ratio_sums(
    values: FloatArray, present: NDArray[np.bool_], m: NDArray[np.int64]
) -> tuple[float, float, float]:
    raters = values.shape[0]
    weight = 1.0 / (m - 1)
    observed = 0.0
    for r1 in range(raters):
        for r2 in range(r1 + 1, raters):
            both = present[r1] & present[r2]
            if both.any():
                d = _ratio_delta(values[r1, both], values[r2, both])
                observed += 2.0 * float((d * weight[both]).sum())
    distinct, counts = np.unique(values[present], return_counts=True)
    counts = counts.astype(np.float64)
    expected = 0.0
    for start in range(0, len(distinct), _CHUNK):
        block = distinct[start : start + _CHUNK]
        d = _ratio_delta(block[:, None], distinct[None, :])
        expected += float(counts[start : start + _CHUNK] @ d @ counts)
    return float(m.sum()), observed, expected


def _identity(x: FloatArray) -> FloatArray:
    return x.copy()


def krippendorff_alpha(
    reliability_data: Any,
    level: Level = "interval",
    value_domain: Sequence[Any] | None = None,
) -> float:
    """Krippendorff's alpha.

    Args:
        reliability_data: Raters x units (rows are judges, columns are arguments); missing
            values as ``None`` or ``NaN``. Numbers, or labels (strings) for nominal data and
            for ordinal data with ``value_domain``.
        level: ``nominal``, ``ordinal``, ``interval`` or ``ratio``.
        value_domain: Ordered list of the possible values (required for ordinal labels).

    Returns:
        Alpha, or ``nan`` where it is undefined (no pairable values, or no expected
        disagreement because every pairable value is the same).

    Raises:
        ValueError: a level the data cannot have, an unknown label, a non-2-D input.
    """
    values = _prepare(reliability_data, level, value_domain)
    present, m = _pairable(values)
    if m.sum() < 2:
        return math.nan
    if level == "nominal":
        n, observed, expected = _nominal_sums(values, present, m)
    elif level == "ratio":
        n, observed, expected = _ratio_sums(values, present, m)
    else:
        transform = _midrank_transform(values, present) if level == "ordinal" else _identity
        n, observed, expected = _interval_sums(values, present, m, transform)
    if n < 2 or expected <= 0:
        return math.nan
    # alpha = 1 - D_o / D_e = 1 - (observed / n) / (expected / (n (n - 1)))
    return float(1.0 - (n - 1.0) * observed / expected)


class BootstrapResult(NamedTuple):
    """An estimate with a percentile interval."""

    estimate: float
    low: float
    high: float
    n_boot: int


def bootstrap_alpha(
    reliability_data: Any,
    level: Level = "interval",
    value_domain: Sequence[Any] | None = None,
    *,
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: int | None = 0,
) -> BootstrapResult:
    """Alpha with a percentile interval from resampling units (columns) with replacement.

    Replicates where alpha is undefined are left out of the percentiles; if none is
    defined, the bounds are ``nan``.
    """
    if not 0 < ci < 1:
        raise ValueError("ci must be between 0 and 1, e.g. 0.95")
    values = _prepare(reliability_data, level, value_domain)
    # labels are coded already; keep the level's meaning on the coded matrix
    coded_level: Level = level
    estimate = krippendorff_alpha(values, coded_level)
    rng = np.random.default_rng(seed)
    units = values.shape[1]
    replicates = []
    for _ in range(n_boot):
        sample = values[:, rng.integers(0, units, units)]
        replicates.append(krippendorff_alpha(sample, coded_level))
    finite = np.array([r for r in replicates if math.isfinite(r)])
    if finite.size == 0:
        return BootstrapResult(estimate, math.nan, math.nan, n_boot)
    tail = (1 - ci) / 2
    low, high = np.quantile(finite, [tail, 1 - tail])
    return BootstrapResult(estimate, float(low), float(high), n_boot)


def _table(counts: ArrayLike) -> FloatArray:
    table = np.asarray(counts, dtype=np.float64)
    if table.ndim != 2 or table.shape[0] == 0:
        raise ValueError("counts must be a 2-D table: items x categories")
    if (table < 0).any():
        raise ValueError("counts must be non-negative")
    raters = table.sum(axis=1)
    if not np.all(raters == raters[0]):
        raise ValueError(
            "every item must have the same number of ratings for Fleiss' kappa; with "
            "missing ratings use krippendorff_alpha(data, level='nominal') instead"
        )
    if raters[0] < 2:
        raise ValueError("Fleiss' kappa needs at least two ratings per item")
    return table


def fleiss_kappa(counts: ArrayLike, method: Literal["fleiss", "randolph"] = "fleiss") -> float:
    r"""Fleiss' kappa (Fleiss 1971) on an items x categories table of counts.

    :math:`\kappa = (\bar P - P_e) / (1 - P_e)` with :math:`\bar P` the mean per-item
    agreement and :math:`P_e = \sum_j p_j^2` from the category marginals (``randolph``:
    :math:`P_e = 1/k`, free marginals). ``nan`` where :math:`P_e = 1`.
    """
    table = _table(counts)
    raters = table[0].sum()
    per_item = ((table * table).sum(axis=1) - raters) / (raters * (raters - 1))
    p_bar = float(per_item.mean())
    if method == "randolph":
        p_e = 1.0 / table.shape[1]
    elif method == "fleiss":
        p = table.sum(axis=0) / table.sum()
        p_e = float((p * p).sum())
    else:
        raise ValueError("method must be 'fleiss' or 'randolph'")
    if p_e >= 1.0 - 1e-15:
        return math.nan
    return float((p_bar - p_e) / (1.0 - p_e))


def _label_codes(labels: Any) -> tuple[NDArray[np.int64], int, int, int]:
    """Items x raters labels as flat category codes: (codes, categories, items, raters)."""
    matrix = np.asarray(labels, dtype=object) if not isinstance(labels, np.ndarray) else labels
    if matrix.ndim != 2:
        raise ValueError("labels must be 2-D: items x raters")
    items, raters = matrix.shape
    flat = matrix.ravel()
    if matrix.dtype.kind == "f":
        missing = np.isnan(flat.astype(np.float64))
    elif matrix.dtype.kind in "iub":
        missing = np.zeros(flat.shape, dtype=bool)
    else:
        missing = np.fromiter((_is_missing(v) for v in flat), dtype=bool, count=flat.size)
    if missing.any():
        raise ValueError(
            "labels has missing ratings, so items have unequal numbers of raters; use "
            "krippendorff_alpha(data, level='nominal'), which handles missing ratings"
        )
    if raters < 2:
        raise ValueError("Fleiss' kappa needs at least two ratings per item")
    if matrix.dtype.kind in "iub" and flat.size:
        # Integer labels: offset them instead of sorting (no np.unique).
        low = int(flat.min())
        codes = flat.astype(np.int64) - low
        width = int(codes.max()) + 1
        if width <= 4 * flat.size + 16:
            return codes, width, items, raters
    keys = flat if matrix.dtype.kind in "fiub" else flat.astype(str)
    distinct, inverse = np.unique(keys, return_inverse=True)
    return inverse.ravel().astype(np.int64), len(distinct), items, raters


def label_counts(labels: Any) -> FloatArray:
    """Items x raters labels to an items x categories count table (unused categories dropped)."""
    codes, width, items, raters = _label_codes(labels)
    item_index = np.repeat(np.arange(items, dtype=np.int64), raters)
    table = np.bincount(item_index * width + codes, minlength=items * width).reshape(items, width)
    return table[:, table.sum(axis=0) > 0].astype(np.float64)


def fleiss_kappa_from_labels(labels: Any) -> float:
    r"""Fleiss' kappa from items x raters labels (numbers or strings).

    Computed from counts without building the items x categories table:
    :math:`\sum_{ij} n_{ij}^2` comes from one bincount over (item, category) pairs.
    """
    codes, width, items, raters = _label_codes(labels)
    item_index = np.repeat(np.arange(items, dtype=np.int64), raters)
    pair_counts = np.bincount(item_index * width + codes)
    squares = float(np.dot(pair_counts, pair_counts))
    total = items * raters
    p_bar = (squares - total) / (total * (raters - 1))
    p = np.bincount(codes) / total
    p_e = float(np.dot(p, p))
    if p_e >= 1.0 - 1e-15:
        return math.nan
    return float((p_bar - p_e) / (1.0 - p_e))


def fleiss_kappa_se(counts: ArrayLike) -> float:
    r"""Large-sample standard error of Fleiss' kappa under the null hypothesis.

    Fleiss (1971), in the corrected form of Fleiss, Nee and Landis (1979):

    .. math::

        SE = \frac{\sqrt{2}}{\sum_j p_j q_j \sqrt{N n (n-1)}}
             \sqrt{\Big(\sum_j p_j q_j\Big)^2 - \sum_j p_j q_j (q_j - p_j)}

    with :math:`N` items, :math:`n` ratings per item and :math:`q_j = 1 - p_j`.
    ``nan`` where every rating falls in one category.
    """
    table = _table(counts)
    items, raters = table.shape[0], table[0].sum()
    p = table.sum(axis=0) / table.sum()
    q = 1.0 - p
    pq = float((p * q).sum())
    if pq <= 0:
        return math.nan
    inner = pq * pq - float((p * q * (q - p)).sum())
    return (
        math.sqrt(2.0)
        / (pq * math.sqrt(items * raters * (raters - 1)))
        * math.sqrt(max(inner, 0.0))
    )
