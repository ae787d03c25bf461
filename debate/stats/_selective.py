r"""Selective verdicts with a stated guarantee: a calibrated confidence and its threshold.

A verdict is declared only when its confidence ``p`` reaches a threshold; the threshold is
chosen on labelled calibration units so that, with probability at least ``1 - risk`` over
the draw of those units, agreement with people on the declared units of new, exchangeable
units is at least ``target``. The procedure is fixed-sequence testing from Learn then Test
(Angelopoulos, Bates, Candès, Jordan, Lei, 2021) as used by Trust or Escalate (Jung,
Brahman, Choi, ICLR 2025):

* candidate thresholds :math:`\lambda_1 > \lambda_2 > \dots` are tested in order;
* at :math:`\lambda`, with :math:`n` calibration units declared (:math:`p \ge \lambda`) and
  :math:`e` of them wrong, the null "agreement on declared units < target" is rejected
  when the exact binomial tail :math:`P(\mathrm{Bin}(n, 1 - \text{target}) \le e) \le
  \text{risk}`;
* testing stops at the first threshold not rejected; the chosen threshold is the last one
  rejected (the most coverage the data supports).

Testing in a fixed order needs no multiplicity correction: a wrong threshold can only be
chosen if the first true null in the order is rejected, which happens with probability at
most ``risk``. Arrays only: ``p`` is any confidence in [0, 1], ``correct`` whether people's
majority agreed with the declared answer.

**Units that share an item.** The binomial counts units as independent. Where an item holds
several units (the pairs of options of one prompt), its units are right or wrong together
more often than independent units would be, the errors vary more than the binomial allows,
and the test is overconfident: on HANNA (55 pairs per prompt) a policy at risk 0.10 fell
below its target in 15.5-22 % of 200 splits. Given each unit's item, the counts are divided
by the design effect before the tail is taken (Rao and Scott, "A simple method for the
analysis of clustered binary data", Biometrics 48, 1992): :math:`n' = n/d`, :math:`e' =
e/d`, with :math:`d` the ratio of the cluster-robust variance of the error rate to the
binomial's, estimated on the units declared at that threshold and never below 1, and the
tail :math:`I_{\text{target}}(n' - e', e' + 1)`, the binomial's continuous extension.
With one unit per item :math:`d = 1` and the test is the exact binomial above.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from debate.exceptions import ConfigurationError
from debate.stats._plain import StatsRecord
from debate.stats._units import (
    BoolArray,
    FloatArray,
    IntArray,
    confidences,
    group_codes,
    is_real,
    numbers,
    outcomes,
    whole,
)

TARGET_FIELD = "--target-agreement"
RISK_FIELD = "--risk"
LABELS_FIELD = "--labels"


class Step(StatsRecord):
    """One tested threshold of the fixed sequence."""

    threshold: float
    n: int
    """Calibration units declared at this threshold (``p >= threshold``)."""
    errors: int
    """Declared units people's majority disagreed with."""
    p_value: float
    """``P(Binomial(n, 1 - target) <= errors)`` on the counts divided by ``design_effect``:
    rejected (passes) when ``<= risk``."""
    design_effect: float = 1.0
    """How much more the error rate varies than independent units' would, from the units of
    one item moving together (1: one unit per item, or no excess seen)."""


class Selection(StatsRecord):
    """The threshold the fixed sequence chose, or why none could be chosen."""

    threshold: float | None
    """Declare when ``p >= threshold``; None: no threshold passes, declare nothing."""
    declared: int
    """Calibration units declared at the threshold (0 without one)."""
    labelled: int
    """Calibration units given (units without a confidence included: never declared)."""
    coverage: float | None
    """``declared / labelled``; None when no unit was given (a cascade tier nobody reaches)."""
    agreement: float | None
    """Share of declared calibration units people's majority agreed with; None if none."""
    target: float
    risk: float
    """The risk this selection was tested at (a cascade tier's share of the whole)."""
    min_declared: int
    """Thresholds declaring fewer calibration units were skipped, not tested."""
    path: list[Step]
    """Every tested threshold, strictest first, up to and including the first failure."""
    design_effect: float = 1.0
    """The chosen threshold's design effect (1 without one, or with one unit per item)."""
    refusal: str | None = None
    """One line: why no threshold passes (None when one does)."""


def min_labelled(target: float, risk: float) -> int:
    """The fewest declared units on which agreement ``target`` can pass at ``risk``.

    Zero errors on ``n`` units pass when ``target ** n <= risk``: with fewer units even a
    flawless record is too likely under agreement just below ``target``. It is the floor of
    both the labelled units a selection needs and the units a tested threshold declares.

    Raises:
        ConfigurationError: ``target`` or ``risk`` out of range (see :func:`check_target`).
    """
    check_target(target)
    check_risk(risk)
    n = max(1, math.ceil(math.log(risk) / math.log(target)))
    while target**n > risk:  # guard the float rounding of the logarithms, both ways
        n += 1
    while n > 1 and target ** (n - 1) <= risk:
        n -= 1
    return n


def default_start(target: float, risk: float, scored: int) -> int:
    """Where the fixed sequence starts by default: the fewest units a tested threshold declares.

    The fewest declared units on which one error can still pass (target 0.90, risk 0.10:
    38), at most half the scored units, never below :func:`min_labelled`. At
    :func:`min_labelled` only a flawless record passes, and a threshold whose agreement is
    above the target still makes an error there often (at agreement 0.95, 22 units hold one
    68 % of the time), which would end the sequence before the thresholds worth their
    coverage are tested; the cap keeps a small calibration set from being tested only as a
    whole. The start depends on the target, the risk and the number of scored units, never
    on a label, so the order of the tests is fixed before the labels are read. On planted
    data (see ``tests/stats/test_selective.py``; nine settings) it raised the summed mean
    coverage over starting at :func:`min_labelled` from 2.63 to 2.86 with 100 labels and
    from 4.19 to 4.56 with 500, and lowered it from 2.08 to 1.82 with 60.

    Args:
        target: Agreement to certify.
        risk: The risk it is tested at.
        scored: Calibration units with a confidence.
    """
    floor = min_labelled(target, risk)
    from scipy.special import bdtr  # 0.15 s to import: paid by the selection that uses it

    one_error = floor
    while bdtr(1, one_error, 1 - target) > risk:
        one_error += 1
    return max(floor, min(one_error, scored // 2))


def check_target(target: float) -> None:
    """Refuse an agreement target outside (0.5, 1): 0.5 is a coin's, 1 no data can certify.

    Raises:
        ConfigurationError: naming ``--target-agreement``.
    """
    if not is_real(target) or not 0.5 < target < 1:
        raise ConfigurationError(
            f"{TARGET_FIELD} must be above 0.5 and below 1, e.g. 0.90; got {target!r}",
            field=TARGET_FIELD,
        )


def check_risk(risk: float) -> None:
    """Refuse a risk outside (0, 0.5]: 0 no finite data meets, above 0.5 is a guess.

    Raises:
        ConfigurationError: naming ``--risk``.
    """
    if not is_real(risk) or not 0 < risk <= 0.5:
        raise ConfigurationError(
            f"{RISK_FIELD} must be above 0 and at most 0.5, e.g. 0.10; got {risk!r}",
            field=RISK_FIELD,
        )


def fixed_sequence_threshold(
    p: ArrayLike,
    correct: ArrayLike,
    *,
    target: float,
    risk: float,
    candidates: ArrayLike | None = None,
    min_declared: int | None = None,
    groups: ArrayLike | None = None,
) -> Selection:
    """Choose the threshold with the most coverage whose declared agreement is certified.

    See the module docstring for the procedure. Thresholds are tested from the strictest;
    those that declare fewer than ``min_declared`` calibration units are skipped rather than
    tested, since one likely to fail would end the sequence before the useful ones are
    reached (see :func:`default_start`). Which are skipped depends on ``p`` alone, never on
    ``correct``, so the order is still fixed before any label is looked at (Trust or
    Escalate's code likewise drops thresholds with few units).

    Args:
        p: Per calibration unit, the confidence in [0, 1] (NaN: none; never declared).
        correct: Per unit, whether people's majority agreed with the declared answer.
        target: Agreement to certify on the declared units, in (0.5, 1).
        risk: Probability, over the draw of calibration units, that the certificate is
            wrong, in (0, 0.5].
        candidates: Thresholds to test (any order; tested strictest first). Default: the
            distinct values of ``p``.
        min_declared: Skip thresholds declaring fewer units. Default:
            :func:`default_start`; never below :func:`min_labelled`.
        groups: Per unit, the item it belongs to (any ids). Units of one item are tested
            with the design effect (module docstring); None: every unit its own item.

    Returns:
        The selection; ``threshold`` None with a one-line ``refusal`` when none passes.

    Raises:
        ConfigurationError: ``target`` or ``risk`` out of range, or fewer labelled units than
            :func:`min_labelled` (field ``--labels``): no threshold could pass.
        ValueError: malformed arrays or candidates.
    """
    floor = min_labelled(target, risk)
    probs = confidences(p)
    right = outcomes(correct, probs.size)
    if probs.size < floor:
        raise ConfigurationError(too_few(probs.size, floor, target, risk), field=LABELS_FIELD)
    items = None if groups is None else group_codes(groups, probs.size)
    return select(probs, right, target, risk, _candidates(candidates), min_declared, items=items)


def too_few(labelled: int, floor: int, target: float, risk: float, split: str = "") -> str:
    """The one-line refusal of a target the labelled units cannot support."""
    return (
        f"{LABELS_FIELD}: {labelled} labelled units cannot support agreement {target:g} with "
        f"risk {risk:g}{split}: even with no error it takes {floor}; label more items, lower "
        f"{TARGET_FIELD} or raise {RISK_FIELD}"
    )


def cascade_thresholds(
    tiers: Sequence[tuple[ArrayLike, ArrayLike]],
    *,
    target: float,
    risk: float,
    min_declared: int | None = None,
    groups: ArrayLike | None = None,
) -> list[Selection]:
    """Thresholds for a cascade of tiers: each decides where confident, else passes on.

    Tier 1 (the cheapest) is calibrated on every unit; tier ``k`` on the units no tier
    before it declared, each earlier tier applying its own threshold to its own confidence.
    The risk is split Bonferroni-style, ``risk / K`` per tier of ``K``: each tier's
    certificate fails with probability at most ``risk / K``, so all hold together with
    probability at least ``1 - risk``, and then agreement on everything the cascade
    declares, a mixture of the tiers' declared units, is at least ``target`` too. Earlier
    tiers' thresholds are chosen on the same units, so the units reaching tier ``k`` are
    taken as given, as in Trust or Escalate; the planted tests measure the whole. A tier
    with no passing threshold declares nothing and passes every unit on.

    Args:
        tiers: Per tier, cheapest first, ``(p, correct)`` for every calibration unit (the
            same units in the same order in every tier; ``correct`` is about that tier's
            own answer).
        target: As for :func:`fixed_sequence_threshold`.
        risk: The whole cascade's risk, split over the tiers.
        min_declared: As for :func:`fixed_sequence_threshold` (at the split risk).
        groups: As for :func:`fixed_sequence_threshold`: each unit's item.

    Returns:
        One selection per tier; each one's ``labelled`` counts the units that reached it.

    Raises:
        ConfigurationError: ``target`` or ``risk`` out of range, or fewer labelled units
            than :func:`min_labelled` at the split risk (field ``--labels``).
        ValueError: no tier, or tiers of different lengths.
    """
    check_target(target)
    check_risk(risk)
    arrays = _tier_arrays(tiers)
    units = arrays[0][0].size
    share = risk / len(arrays)
    floor = min_labelled(target, share)
    if units < floor:
        split = f" (split {len(arrays)} ways: {share:.3g} a tier)" if len(arrays) > 1 else ""
        raise ConfigurationError(too_few(units, floor, target, risk, split), field=LABELS_FIELD)
    items = None if groups is None else group_codes(groups, units)
    return _cascade(arrays, items, target, share, min_declared)


def _cascade(
    arrays: list[tuple[FloatArray, BoolArray]],
    items: IntArray | None,
    target: float,
    share: float,
    min_declared: int | None,
) -> list[Selection]:
    """Each tier selected on the units no earlier tier declared, at its share of the risk."""
    waiting = np.ones(arrays[0][0].size, dtype=bool)
    selections = []
    for number, (probs, right) in enumerate(arrays, start=1):
        where = f"tier {number}: " if len(arrays) > 1 else ""
        chosen = select(
            probs[waiting],
            right[waiting],
            target,
            share,
            None,
            min_declared,
            where,
            items=None if items is None else items[waiting],
        )
        selections.append(chosen)
        if chosen.threshold is not None:
            with np.errstate(invalid="ignore"):
                waiting &= ~(probs >= chosen.threshold)
    return selections


def _tier_arrays(
    tiers: Sequence[tuple[ArrayLike, ArrayLike]],
) -> list[tuple[FloatArray, BoolArray]]:
    """Each tier's checked ``(p, correct)``; a cascade's tiers must hold the same units."""
    if not tiers:
        raise ValueError("cascade_thresholds needs at least one tier")
    arrays = []
    for p, correct in tiers:
        probs = confidences(p)
        arrays.append((probs, outcomes(correct, probs.size)))
    units = arrays[0][0].size
    if any(probs.size != units for probs, _ in arrays):
        sizes = [probs.size for probs, _ in arrays]
        raise ValueError(f"every tier needs the same calibration units; got sizes {sizes}")
    return arrays


def select(
    probs: FloatArray,
    right: BoolArray,
    target: float,
    risk: float,
    candidates: FloatArray | None,
    min_declared: int | None,
    where: str = "",
    *,
    items: IntArray | None = None,
) -> Selection:
    """The fixed sequence on checked arrays; a refusal, not an error, when nothing passes.

    ``items`` (codes, one per unit) turns on the design effect (module docstring).
    """
    scored = ~np.isnan(probs)
    count = int(scored.sum())
    if min_declared is None:
        least = default_start(target, risk, count)
    else:
        least = max(whole(min_declared, "min_declared"), min_labelled(target, risk))
    path, stop = _tested_path(
        probs[scored],
        right[scored],
        None if items is None else items[scored],
        target,
        risk,
        candidates,
        least,
    )
    labelled = int(probs.size)
    common = {
        "labelled": labelled,
        "target": target,
        "risk": risk,
        "min_declared": least,
        "path": path,
    }
    if stop == 0:
        return Selection(
            threshold=None,
            declared=0,
            coverage=0.0 if labelled else None,
            agreement=None,
            refusal=where + _refusal(path, labelled, count, least, target, risk),
            **common,
        )
    chosen = path[stop - 1]
    return Selection(
        threshold=chosen.threshold,
        design_effect=chosen.design_effect,
        declared=chosen.n,
        coverage=chosen.n / labelled,
        agreement=1 - chosen.errors / chosen.n,
        **common,
    )


def _tested_path(
    probs: FloatArray,
    right: BoolArray,
    items: IntArray | None,
    target: float,
    risk: float,
    candidates: FloatArray | None,
    least: int,
) -> tuple[list[Step], int]:
    """Test the thresholds declaring ``least`` units or more, strictest first (scored units).

    Returns the path up to and including the first failure, and how many passed: the
    counts at every threshold come from one sort, so a path over every distinct ``p``
    costs no more than one threshold's.
    """
    asc = np.sort(probs)
    desc = np.argsort(-probs, kind="stable")
    wrong_desc = ~right[desc]
    cum_wrong = np.concatenate([[0], np.cumsum(wrong_desc)])
    thresholds = np.unique(asc)[::-1] if candidates is None else candidates
    n = asc.size - np.searchsorted(asc, thresholds, side="left")
    keep = n >= least
    thresholds, n = thresholds[keep], n[keep]
    errors = cum_wrong[n]
    if items is None:
        effect = np.ones(n.size)
    else:
        effect = design_effects(items[desc], wrong_desc, n)
    p_values = _binomial_tail(errors, n, 1 - target, effect)
    failed = np.flatnonzero(p_values > risk)
    stop = int(failed[0]) if failed.size else thresholds.size
    tested = slice(0, stop + 1)
    path = [
        Step(threshold=float(t), n=int(k), errors=int(e), p_value=float(pv), design_effect=float(d))
        for t, k, e, pv, d in zip(
            thresholds[tested],
            n[tested],
            errors[tested],
            p_values[tested],
            effect[tested],
            strict=True,
        )
    ]
    return path, stop


def _refusal(
    path: list[Step], labelled: int, scored: int, least: int, target: float, risk: float
) -> str:
    head = (
        f"no threshold reaches agreement {target:g} with risk {risk:g} on {labelled} labelled units"
    )
    if not path:
        need = f"a tested threshold must declare at least {least}"
        return f"{head}: {need} and {scored} have a confidence"
    first = path[0]
    return (
        f"{head}: the first tested threshold, {first.threshold:.4g}, agrees "
        f"{1 - first.errors / first.n:.3f} on {first.n} units with p-value "
        f"{first.p_value:.3g} > {risk:g}, and testing stops at the first failure"
    )


def design_effects(items: IntArray, wrong: BoolArray, n: IntArray) -> FloatArray:
    r"""The design effect of the first ``n[k]`` units, for every ``k`` (units in test order).

    The error rate's cluster-robust variance over its binomial variance,
    :math:`d = \sum_g (e_g - c\,m_g)^2 / (n\,c(1 - c))` with :math:`m_g, e_g` item
    :math:`g`'s declared units and errors and :math:`c = (e + 1/2)/(n + 1)`, the error rate
    pulled off 0 so that a flawless record still has a variance; never below 1, since the
    binomial is what independent units give. The three sums it needs grow unit by unit, so
    every prefix costs O(1) after one sort: ``decide`` chooses among 10,000 items' thresholds
    in the same pass as the binomial.

    Args:
        items: Item codes of the scored units, in the order the thresholds declare them.
        wrong: Whether each of those units is an error.
        n: Units declared at each tested threshold (prefix lengths).
    """
    w = wrong.astype(np.float64)
    by_item = np.argsort(items, kind="stable")
    sorted_items = items[by_item]
    starts = np.flatnonzero(np.r_[True, sorted_items[1:] != sorted_items[:-1]])
    run = np.repeat(starts, np.diff(np.r_[starts, sorted_items.size]))
    before = np.empty(items.size)  # units of the same item declared earlier
    before[by_item] = np.arange(items.size) - run
    cum = np.cumsum(w[by_item])
    errors_before = np.empty(items.size)  # errors among them
    errors_before[by_item] = cum - w[by_item] - np.r_[0.0, cum][run]
    # growth of sum m_g^2, sum e_g^2 and sum e_g m_g when the unit joins its item
    s_mm = np.r_[0.0, np.cumsum(2 * before + 1)][n]
    s_ee = np.r_[0.0, np.cumsum(w * (2 * errors_before + 1))][n]
    s_em = np.r_[0.0, np.cumsum(errors_before + w * (before + 1))][n]
    e = np.r_[0.0, np.cumsum(w)][n]
    c = (e + 0.5) / (n + 1)
    spread = s_ee - 2 * c * s_em + c * c * s_mm
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = spread / (n * c * (1 - c))
    return np.asarray(np.where(n > 0, np.maximum(ratio, 1.0), 1.0), dtype=np.float64)


def _binomial_tail(
    errors: NDArray[np.int64], n: NDArray[np.intp], q: float, effect: FloatArray
) -> FloatArray:
    """``P(Binomial(n, q) <= errors)``, exact; on counts shrunk by ``effect`` where above 1.

    The shrunk counts are not whole, so the tail is the binomial's continuous extension,
    the regularised incomplete beta ``I_{1-q}(n - e, e + 1)``, equal to it on whole counts.
    """
    if errors.size == 0:
        return np.zeros(0)
    # 0.15 s to import: paid by the selection that uses it
    from scipy.special import bdtr, betainc

    exact = np.asarray(bdtr(errors, n, q), dtype=np.float64)
    shrunk = effect > 1
    if not shrunk.any():
        return exact
    n_eff = n[shrunk] / effect[shrunk]
    e_eff = errors[shrunk] / effect[shrunk]
    with np.errstate(invalid="ignore"):
        tail = betainc(n_eff - e_eff, e_eff + 1, 1 - q)
    exact[shrunk] = np.where(n_eff > e_eff, tail, 1.0)  # every unit an error: no evidence
    return exact


def _candidates(candidates: ArrayLike | None) -> FloatArray | None:
    """Given thresholds, distinct and strictest first."""
    if candidates is None:
        return None
    x = numbers(candidates, "candidates").ravel()
    if x.size == 0 or np.isnan(x).any() or (x < 0).any() or (x > 1).any():
        raise ValueError("candidates must be thresholds in [0, 1], at least one")
    return np.asarray(np.unique(x)[::-1], dtype=np.float64)
