r"""Inter-rater agreement: Krippendorff's alpha (all four levels) and Fleiss' kappa.

Krippendorff's alpha follows the coincidence-matrix definition (Krippendorff 2011,
"Computing Krippendorff's Alpha-Reliability"). Only *pairable* values count: values in units
(columns) that two or more raters rated. With :math:`m_u` values in unit :math:`u`, the
coincidence matrix is :math:`o_{ck} = \sum_u \#\{(i, j) \in u,\ i \ne j: x_i = c, x_j = k\}
/ (m_u - 1)`, its marginals :math:`n_c = \sum_k o_{ck}` and :math:`n = \sum_c n_c`:

.. math::

    D_o = \frac{1}{n} \sum_{c,k} o_{ck}\, \delta^2_{ck}, \qquad
    D_e = \frac{1}{n(n-1)} \sum_{c,k} n_c n_k\, \delta^2_{ck}, \qquad
    \alpha = 1 - \frac{D_o}{D_e} = 1 - (n-1) \frac{\sum o_{ck} \delta^2_{ck}}
    {\sum n_c n_k \delta^2_{ck}} .

Metrics: nominal :math:`[c \ne k]`; ordinal :math:`(\sum_{g=c}^{k} n_g - (n_c+n_k)/2)^2`;
interval :math:`(c-k)^2`; ratio :math:`((c-k)/(c+k))^2`. Alpha is ``nan`` where it is
undefined (no pairable values, or :math:`D_e = 0`), never a made-up 1.0.

How it is computed (time and memory; :math:`N` ratings, :math:`V` distinct values):

- interval, any data: closed-form sums, :math:`O(N)` time, :math:`O(U)` memory. Within a
  unit :math:`\sum_{i \ne j}(x_i - x_j)^2 = 2 m_u \sum_i (x_i - \bar x_u)^2`, and over the
  pooled values :math:`\sum_{c,k} n_c n_k (c-k)^2 = 2 n \sum (x - \bar x)^2`; deviations are
  taken from unit means and combined exactly (Chan et al.), so large offsets cost no
  precision. No :math:`V \times V` matrix, however many distinct values.
- nominal, ordinal, ratio with at most ``SMALL_DOMAIN`` distinct values (integer scores):
  the :math:`V \times V` coincidence matrix, accumulated block by block from per-unit value
  counts (``np.bincount``) as :math:`C^T \mathrm{diag}(1/(m_u-1)) C` minus its diagonal
  correction. :math:`O(N + U V^2)` time, :math:`O(V^2)` memory beyond one block.
- ordinal, many values: the ordinal distance is a difference of mid-ranks,
  :math:`\sum_{g=c}^{k} n_g - (n_c+n_k)/2 = r_k - r_c` with :math:`r_c = \sum_{g<c} n_g +
  n_c/2`, so ordinal alpha is interval alpha on the mid-ranks of the pairable values
  (one sort, :math:`O(N \log N)` time, :math:`O(N)` memory).
- nominal, many values: per unit :math:`\sum_{i \ne j}[x_i \ne x_j] = m_u(m_u-1) -
  \sum_c n_{uc}(n_{uc}-1)`, counted from each column sorted (runs of equal values), and
  :math:`\sum_c n_c^2` from the sorted pooled values: :math:`O(N \log N)`, :math:`O(N)`.
- ratio, many values: the one quadratic case. :math:`D_o` runs over rater pairs inside
  each unit (:math:`O(R^2 U)`), :math:`D_e` over pairs of distinct values
  (:math:`O(V^2)` time, in chunks of :math:`O(V)` memory).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from debate.stats._alpha import (
    FloatArray,
    alpha_of,
    is_missing,
    is_number,
    prepare,
    replicator,
)
from debate.stats._calibration import kind_of
from debate.stats._plain import Level


class UnequalRatersError(ValueError):
    """Items have different numbers of ratings, which Fleiss' kappa cannot take."""


def _check_domain(value_domain: Sequence[Any] | None) -> None:
    """A value domain is a list of distinct values (a lone string is not one)."""
    if value_domain is None:
        return
    if isinstance(value_domain, str | bytes) or not isinstance(value_domain, Sequence):
        raise ValueError(f"value_domain must be a list of values, not {value_domain!r}")
    seen: list[Any] = []
    for value in value_domain:
        if value in seen:
            raise ValueError(f"value_domain lists {value!r} twice; list each value once")
        seen.append(value)


def _check_whole(value: Any, name: str, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{name} must be a whole number, at least {low}; got {value!r}")


_UNEQUAL = (
    "every item needs the same number of ratings for Fleiss' kappa; with missing ratings "
    "use krippendorff_alpha(data, level='nominal'), which handles them"
)


def krippendorff_alpha(
    reliability_data: Any,
    level: Level = "interval",
    value_domain: Sequence[Any] | None = None,
) -> float:
    r"""Krippendorff's alpha, :math:`1 - D_o / D_e` on the coincidence matrix.

    Units are weighted by :math:`1/(m_u - 1)`, only pairable values (units with two or
    more ratings) enter, and :math:`D_e` uses :math:`n(n-1)` (no self-pairs); see the
    module docstring for the formulas and for the cost of each level.

    Args:
        reliability_data: Raters x units (rows are judges, columns are arguments); missing
            values as ``None`` or ``NaN``. Numbers, or labels (strings) for nominal data
            and for ordinal data with ``value_domain``.
        level: ``"nominal"``, ``"ordinal"``, ``"interval"`` or ``"ratio"``.
        value_domain: The possible values; for ordinal labels, in their order. Every value
            in the data must be in it.

    Returns:
        Alpha, or ``nan`` where it is undefined: no pairable values, or no expected
        disagreement because every pairable value is the same.

    Raises:
        ValueError: Input that is not 2-D, labels where the level needs numbers, ordinal
            labels without ``value_domain``, a value outside ``value_domain`` or repeated in
            it, an infinite value, or negative ratio data.
    """
    _check_domain(value_domain)
    return alpha_of(prepare(reliability_data, level, value_domain), level)


class BootstrapResult(NamedTuple):
    """An estimate with a percentile interval."""

    estimate: float
    """The statistic on the original data."""
    low: float
    """Lower percentile bound (``nan`` if no replicate was defined)."""
    high: float
    """Upper percentile bound (``nan`` if no replicate was defined)."""
    n_boot: int
    """Number of replicates drawn (undefined ones are left out of the percentiles)."""


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

    Each replicate draws as many units as the data has, with replacement, and computes
    alpha on them; the interval is the ``(1-ci)/2`` and ``(1+ci)/2`` percentiles of the
    replicates where alpha is defined. The same seed gives the same interval.

    Args:
        reliability_data: Raters x units, as for :func:`krippendorff_alpha`.
        level: Level of measurement.
        value_domain: As for :func:`krippendorff_alpha`.
        n_boot: Number of replicates (0 gives only the estimate).
        ci: Coverage of the interval, between 0 and 1.
        seed: Seed of the resampling; ``None`` for fresh entropy.

    Returns:
        The estimate on the original data and the interval; the bounds are ``nan`` when no
        replicate has a defined alpha.

    Raises:
        ValueError: ``ci`` outside (0, 1), an ``n_boot`` that is not a whole number of 0
            or more, or bad data (see :func:`krippendorff_alpha`).
    """
    if not isinstance(ci, int | float) or isinstance(ci, bool) or not 0 < ci < 1:
        raise ValueError(f"ci must be between 0 and 1, e.g. 0.95; got {ci!r}")
    _check_whole(n_boot, "n_boot", 0)
    _check_domain(value_domain)
    values = prepare(reliability_data, level, value_domain)
    estimate = alpha_of(values, level)
    units = values.shape[1]
    if n_boot == 0 or units == 0:
        return BootstrapResult(estimate, math.nan, math.nan, n_boot)
    rng = np.random.default_rng(seed)
    replicate = replicator(values, level)
    draws = np.array([replicate(rng.integers(0, units, size=(units,))) for _ in range(n_boot)])
    finite = draws[np.isfinite(draws)]
    if finite.size == 0:
        return BootstrapResult(estimate, math.nan, math.nan, n_boot)
    tail = (1.0 - ci) / 2.0
    low, high = np.quantile(finite, [tail, 1.0 - tail])
    return BootstrapResult(estimate, float(low), float(high), n_boot)


# --- Fleiss' kappa ------------------------------------------------------------------------


def _table(counts: ArrayLike) -> FloatArray:
    given = np.asarray(counts)
    if given.dtype.kind not in "iuf":
        raise ValueError(f"counts must hold whole numbers of ratings, not {kind_of(given)}")
    table = given.astype(np.float64)
    if table.ndim != 2 or table.shape[0] == 0 or table.shape[1] == 0:
        raise ValueError("counts must be a 2-D table: items x categories, at least one of each")
    if not np.isfinite(table).all() or (table < 0).any() or (table != np.floor(table)).any():
        raise ValueError("counts must be whole, non-negative numbers of ratings")
    raters = table.sum(axis=1)
    if not np.all(raters == raters[0]):
        first = int(np.flatnonzero(raters != raters[0])[0])
        raise UnequalRatersError(
            f"item {first} has {raters[first]:g} ratings where item 0 has {raters[0]:g}; "
            + _UNEQUAL
        )
    if raters[0] < 2:
        raise ValueError("Fleiss' kappa needs at least two ratings per item")
    return table


def _kappa(p_bar: float, p_e: float) -> float:
    if p_e >= 1.0 - 1e-15:
        return math.nan
    return float((p_bar - p_e) / (1.0 - p_e))


def fleiss_kappa(counts: ArrayLike, method: Literal["fleiss", "randolph"] = "fleiss") -> float:
    r"""Fleiss' kappa (Fleiss 1971) on an items x categories table of counts.

    :math:`\kappa = (\bar P - P_e) / (1 - P_e)`, with the mean per-item agreement
    :math:`\bar P = \frac{1}{N} \sum_i \frac{\sum_j n_{ij}^2 - n}{n(n-1)}` and chance
    agreement :math:`P_e = \sum_j p_j^2` from the category shares :math:`p_j` (Randolph's
    free-marginal kappa: :math:`P_e = 1/k` for :math:`k` categories).

    Args:
        counts: Items x categories; every row sums to the same number of raters ``n``.
        method: ``"fleiss"``, or ``"randolph"`` for the free-marginal variant.

    Returns:
        Kappa, or ``nan`` where :math:`P_e = 1` (every rating in one category).

    Raises:
        UnequalRatersError: Rows with different sums (use Krippendorff's nominal alpha).
        ValueError: A table that is not 2-D, counts that are not whole non-negative numbers,
            fewer than two raters, or an unknown ``method``.
    """
    if method not in ("fleiss", "randolph"):
        raise ValueError(f"method must be 'fleiss' or 'randolph'; got {method!r}")
    table = _table(counts)
    raters = float(table[0].sum())
    p_bar = float((((table * table).sum(axis=1) - raters) / (raters * (raters - 1))).mean())
    if method == "randolph":
        return _kappa(p_bar, 1.0 / table.shape[1])
    if method != "fleiss":
        raise ValueError(f"method must be 'fleiss' or 'randolph'; got {method!r}")
    p = table.sum(axis=0) / table.sum()
    return _kappa(p_bar, float(p @ p))


def _label_codes(labels: Any) -> tuple[NDArray[np.intp], int]:
    """Items x raters labels as category codes 0..width-1 (unused codes allowed)."""
    matrix = labels if isinstance(labels, np.ndarray) else np.asarray(labels, dtype=object)
    if matrix.ndim != 2 or matrix.shape[0] == 0:
        raise ValueError("labels must be 2-D: items x raters, at least one item")
    if matrix.dtype.kind == "O":
        flat = matrix.ravel()
        if any(is_missing(v) for v in flat):
            raise UnequalRatersError("labels has missing ratings; " + _UNEQUAL)
        if all(is_number(v) for v in flat):
            matrix = matrix.astype(np.float64)
    if matrix.dtype.kind == "f" and np.isnan(matrix).any():
        raise UnequalRatersError("labels has missing ratings (NaN); " + _UNEQUAL)
    if matrix.dtype.kind == "f" and np.isinf(matrix).any():
        raise ValueError("labels has an infinite value; give a label or a finite number")
    if matrix.shape[1] < 2:
        raise ValueError("Fleiss' kappa needs at least two raters (columns)")
    if matrix.dtype.kind in "iubf":
        low, high = matrix.min(), matrix.max()
        span = float(high) - float(low)
        integral = matrix.dtype.kind != "f" or bool((matrix == np.floor(matrix)).all())
        if integral and span < 4 * matrix.size + 16:  # integers: offset, no sort
            return (matrix - low).astype(np.intp), int(span) + 1
    try:
        distinct, inverse = np.unique(matrix, return_inverse=True)
    except TypeError:  # labels of mixed types: compare them as text
        distinct, inverse = np.unique(matrix.astype(str), return_inverse=True)
    return inverse.reshape(matrix.shape).astype(np.intp), int(distinct.size)


def label_counts(labels: Any) -> FloatArray:
    """Items x raters labels to an items x categories table (categories in sorted order)."""
    codes, width = _label_codes(labels)
    items = codes.shape[0]
    codes = codes + (np.arange(items, dtype=np.intp) * width)[:, None]
    table = np.bincount(codes.ravel(order="K"), minlength=items * width).reshape(items, width)
    return table[:, table.sum(axis=0) > 0].astype(np.float64)


def fleiss_kappa_from_labels(labels: Any) -> float:
    r"""Fleiss' kappa from items x raters labels (numbers or strings).

    Same value as :func:`fleiss_kappa` on the count table, without building it: with
    codes offset per item, one ``bincount`` gives every :math:`n_{ij}` and
    :math:`\sum_{ij} n_{ij}^2` is its dot product with itself; integer labels are offset
    instead of sorted.

    Args:
        labels: Items x raters; every cell a label (no missing ratings).

    Returns:
        Kappa, or ``nan`` where every rating is the same.

    Raises:
        UnequalRatersError: Missing ratings (``None``/``NaN``); use Krippendorff's nominal
            alpha, which handles them.
        ValueError: Labels that are not 2-D, or fewer than two raters.
    """
    codes, width = _label_codes(labels)
    items, raters = codes.shape
    codes += (np.arange(items, dtype=np.intp) * width)[:, None]
    per_pair = np.bincount(codes.ravel(order="K"), minlength=items * width).astype(np.float64)
    marginals = per_pair.reshape(items, width).sum(axis=0)
    total = float(items * raters)
    p_bar = (float(per_pair @ per_pair) - total) / (total * (raters - 1))
    p = marginals / total
    return _kappa(p_bar, float(p @ p))


def fleiss_kappa_se(
    counts: ArrayLike, *, form: Literal["corrected", "fleiss1971"] = "corrected"
) -> float:
    r"""Large-sample standard error of Fleiss' kappa under the null hypothesis (kappa = 0).

    With :math:`N` items, :math:`n` ratings per item, category shares :math:`p_j` and
    :math:`q_j = 1 - p_j`, the default is Fleiss's large-sample formula in the form
    corrected by Fleiss, Nee and Landis (1979), which R's ``irr::kappam.fleiss`` reports
    (its z = kappa / SE):

    .. math::

        SE = \frac{\sqrt{2}}{\sum_j p_j q_j \sqrt{N n (n-1)}}
             \sqrt{\Big(\sum_j p_j q_j\Big)^2 - \sum_j p_j q_j (q_j - p_j)} .

    ``form="fleiss1971"`` gives the formula as first printed in Fleiss (1971),
    :math:`Var = \frac{2}{N n (n-1)} \frac{P_e - (2n-3) P_e^2 + 2(n-2) \sum_j p_j^3}
    {(1 - P_e)^2}` with :math:`P_e = \sum_j p_j^2`; it overstates the spread of kappa
    under the null, so use it only to reproduce older reports.

    Args:
        counts: Items x categories, as for :func:`fleiss_kappa`.
        form: ``"corrected"`` (default) or ``"fleiss1971"``.

    Returns:
        The standard error, or ``nan`` where every rating falls in one category.

    Raises:
        UnequalRatersError: Rows with different sums.
        ValueError: A bad table or an unknown ``form``.
    """
    if form not in ("corrected", "fleiss1971"):
        raise ValueError(f"form must be 'corrected' or 'fleiss1971'; got {form!r}")
    table = _table(counts)
    items, raters = float(table.shape[0]), float(table[0].sum())
    p = table.sum(axis=0) / table.sum()
    q = 1.0 - p
    pq = float(p @ q)
    if pq <= 1e-15:
        return math.nan
    scale = items * raters * (raters - 1.0)
    if form == "corrected":
        inner = pq * pq - float((p * q * (q - p)).sum())
        return math.sqrt(2.0 * max(inner, 0.0) / scale) / pq
    if form != "fleiss1971":
        raise ValueError(f"form must be 'corrected' or 'fleiss1971'; got {form!r}")
    p_e = float(p @ p)
    numerator = p_e - (2.0 * raters - 3.0) * p_e * p_e + 2.0 * (raters - 2.0) * float(p @ (p * p))
    return math.sqrt(2.0 * max(numerator, 0.0) / scale) / (1.0 - p_e)
