"""The decision rules for recorded pairwise verdicts (A, B, tie), vectorised over items.

Judges who compared two options and said which is better (or that neither is) leave a
verdict, not scores, so the score rules of :mod:`debate.panel._rules` do not apply as they
stand; these rules keep their order and their honesty:

1. ``insufficient``: fewer than ``Thresholds.min_judges`` (two) judges gave a verdict
   with a positive weight.
2. ``irreconcilable``: both A and B have support and the smaller of them holds at least
   ``Thresholds.split_share`` of the A/B weight; the reasons name who said what.
3. ``too_close``: tie holds at least as much weight as the leading side, or the margin
   ``share(A) - share(B)`` is under ``Thresholds.gap``, or its interval at
   ``Thresholds.confidence`` includes 0.
4. ``winner``: everything above passed.

A judge who read both orders and gave the same verdict twice counts once with that verdict;
two different verdicts count as ``tie``, because a verdict that follows the position of the
options is no preference between them (said in the reasons). A judge with no row for an
item is unscored on it: named in the reasons and left out of every statistic.

Every statistic is computed on whole columns, once per distinct row of calls (a few
thousand rows for a whole file): 100,000 items x 8 judges are decided in 2-3 s on two
shared cores, most of it in building the 100,000 records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from debate.panel import Confidence, confidence, verdict_evidence
from debate.records import (
    NO_CALL,
    ORDERS,
    VERDICTS,
    ItemDecision,
    Outcome,
    Thresholds,
    VerdictTable,
    interval_confidence,
)
from debate.stats import percentile_interval

N_BOOT = 2000
"""Bootstrap draws of each item's judges, as :func:`debate.stats.bootstrap_margin`; each
draw resamples both the A-first and the B-first order, so 2 x N_BOOT replicates."""
OPTIONS: tuple[str, str] = ("A", "B")
"""The options of a verdict table's item: the verdict names them."""
_SIGN = np.array([1.0, -1.0, 0.0])
"""Each verdict's contribution to the margin: +1 for A, -1 for B, 0 for tie."""
_OUTCOMES: tuple[Outcome, ...] = ("winner", "too_close", "irreconcilable", "insufficient")
"""The rules' outcomes, by code (``escalate`` is a policy's, never the rules')."""


@dataclass(frozen=True)
class VerdictMatrix:
    """Each judge's one verdict per item, with the readings of both orders combined."""

    calls: NDArray[np.int8]
    """``items x judges``: index into VERDICTS, or NO_CALL where the judge gave none."""
    position_sensitive: NDArray[np.bool_]
    """``items x judges``: the judge's readings disagreed, so its call is ``tie``."""
    readings: dict[tuple[int, int], list[tuple[str, str]]]
    """For position-sensitive cells only: each reading's ``(order, verdict)``."""


def verdict_matrix(table: VerdictTable) -> VerdictMatrix:
    """One call per (item, judge): the verdict if all its readings agree, else ``tie``."""
    n_items, n_judges = len(table.items), len(table.judges)
    cell = table.item.astype(np.int64) * n_judges + table.judge
    counts = np.bincount(cell * 3 + table.verdict, minlength=n_items * n_judges * 3)
    seen = counts.reshape(n_items, n_judges, 3) > 0
    kinds = seen.sum(axis=2)
    calls = np.where(kinds == 0, NO_CALL, np.where(kinds == 1, seen.argmax(axis=2), 2))
    sensitive = kinds > 1
    readings: dict[tuple[int, int], list[tuple[str, str]]] = {}
    for row in np.flatnonzero(sensitive.reshape(-1)[cell]):
        key = (int(table.item[row]), int(table.judge[row]))
        order = ORDERS[table.order[row]] or "unordered"
        readings.setdefault(key, []).append((order, VERDICTS[table.verdict[row]]))
    return VerdictMatrix(calls.astype(np.int8), sensitive, readings)


@dataclass(frozen=True)
class _Columns:
    """The statistics of every decided item, one array each."""

    calls: NDArray[np.int8]
    weighted: NDArray[np.float64]
    """``items x 3``: the weight of the judges saying A, B, tie."""
    counted: NDArray[np.int64]
    """Judges with a verdict and positive weight."""
    margin: NDArray[np.float64]
    interval: NDArray[np.float64]
    """``items x 2``; NaN where fewer than two judges count."""
    outcome: NDArray[np.int64]
    """Index into ``_OUTCOMES``."""


def decide_verdicts(
    table: VerdictTable,
    *,
    thresholds: Thresholds,
    judge_weights: Mapping[str, float] | None = None,
    seed: int = 0,
    items: Sequence[int] | None = None,
) -> list[ItemDecision]:
    """Decide every item of a verdict table (or the ``items`` given, by index, in order).

    Args:
        table: the verdicts, one or two readings per (item, judge).
        thresholds: ``split_share``, ``gap`` and ``confidence`` are read.
        judge_weights: a weight of at least 0 for every judge of the table; None for equal
            weights. A judge with weight 0 is shown but not counted.
        seed: the bootstrap's seed; items with the same number of counted judges share
            their draws, so equal evidence gets an equal interval, and a table with A and B
            relabelled gets the mirrored one.
        items: indices into ``table.items``; None for all.

    Raises:
        ValueError: a weight missing, negative or not finite, or an item index out of range.
    """
    weights = _weights(table.judges, judge_weights)
    chosen = _chosen(len(table.items), items)
    matrix = verdict_matrix(table)
    # Every statistic is a function of an item's row of calls: compute each distinct row once.
    rows, patterns = _patterns(matrix.calls[chosen])
    columns = _columns(rows, weights, thresholds, seed)
    weight_map = dict(zip(table.judges, map(float, weights), strict=True))
    context = (table, matrix, columns, weight_map, thresholds)
    sensitive = np.asarray(matrix.position_sensitive[chosen].any(axis=1)).tolist()
    found = confidence(verdict_evidence(table)[chosen], weights)
    evidence = _evidence_fields(found)
    templates: dict[int, ItemDecision] = {}
    decisions = []
    for k, (i, p) in enumerate(zip(chosen.tolist(), patterns.tolist(), strict=True)):
        # So are the records but for the name and the evidence (a judge's probabilities
        # differ item by item), except for the notes on a position-sensitive judge's
        # readings: each distinct row's record is validated once, then copied.
        if sensitive[k]:
            fields = {**_fields(p, i, *context), **evidence[k]}
            decisions.append(ItemDecision(item=table.items[i], **fields))
            continue
        if (template := templates.get(p)) is None:
            template = templates[p] = ItemDecision(item="", **_fields(p, i, *context))
        decisions.append(_copy(template, table.items[i], evidence[k]))
    return decisions


def _evidence_fields(found: Confidence) -> list[dict[str, Any]]:
    """Each decided item's lead, log-odds and (uncalibrated) p_agree, as record fields."""
    lead = [None if c == NO_CALL else OPTIONS[c] for c in found.lead.tolist()]
    return [
        {"lead": side, "evidence": L, "p_agree": p if side is not None else None}
        for side, L, p in zip(
            lead, found.log_odds.tolist(), found.p_uncalibrated.tolist(), strict=True
        )
    ]


def _copy(template: ItemDecision, item: str, evidence: Mapping[str, Any]) -> ItemDecision:
    """The template under another name, with containers of its own (no aliasing)."""
    shares = template.shares
    update = {
        **evidence,
        "item": item,
        "shares": None if shares is None else dict(shares),
        "judge_margins": dict(template.judge_margins),
        "weights": dict(template.weights),
        "reasons": list(template.reasons),
    }
    return template.model_copy(update=update)


def _patterns(calls: NDArray[np.int8]) -> tuple[NDArray[np.int8], NDArray[np.intp]]:
    """The distinct rows of calls, and each item's row among them (rows compared as bytes)."""
    n_judges = calls.shape[1]
    if calls.shape[0] == 0 or n_judges == 0:
        return calls[:1], np.zeros(calls.shape[0], dtype=np.intp)
    as_bytes = np.ascontiguousarray(calls).view(np.dtype((np.void, n_judges))).reshape(-1)
    unique, inverse = np.unique(as_bytes, return_inverse=True)
    rows = unique.view(np.int8).reshape(-1, n_judges)
    return rows, inverse.reshape(-1)


def _weights(judges: tuple[str, ...], given: Mapping[str, float] | None) -> NDArray[np.float64]:
    if given is None:
        return np.ones(len(judges))
    missing = [j for j in judges if j not in given]
    if missing:
        raise ValueError(
            f"judge_weights has no weight for judge {missing[0]}: give every judge of the "
            "table a weight (0 leaves a judge out)"
        )
    weights = np.array([given[j] for j in judges], dtype=np.float64)
    bad = ~np.isfinite(weights) | (weights < 0)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"judge_weights[{judges[j]!r}] is {weights[j]}: a weight is a finite number >= 0"
        )
    return weights


def _chosen(n_items: int, items: Sequence[int] | None) -> NDArray[np.int64]:
    if items is None:
        return np.arange(n_items)
    chosen = np.asarray(items, dtype=np.int64).reshape(-1)
    bad = (chosen < 0) | (chosen >= n_items)
    if bad.any():
        raise ValueError(f"items has index {chosen[bad][0]}: the table has items 0..{n_items - 1}")
    return chosen


def _columns(
    calls: NDArray[np.int8], weights: NDArray[np.float64], thresholds: Thresholds, seed: int
) -> _Columns:
    counts = (calls >= 0) & (weights > 0)
    w = np.where(counts, weights, 0.0)
    weighted = np.stack([(w * (calls == k)).sum(axis=1) for k in range(3)], axis=1)
    total = weighted.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        margin = (weighted[:, 0] - weighted[:, 1]) / total
    interval = _intervals(calls, w, counts, thresholds.confidence, seed)
    columns = _Columns(calls, weighted, counts.sum(axis=1), margin, interval, np.empty(0, int))
    return replace(columns, outcome=_outcomes(columns, thresholds))


def _outcomes(c: _Columns, thresholds: Thresholds) -> NDArray[np.int64]:
    """Rules 1-4, first match wins, as codes into ``_OUTCOMES``."""
    a, b, tie = c.weighted.T
    side_total = a + b
    with np.errstate(invalid="ignore", divide="ignore"):
        minority = np.minimum(a, b) / side_total
    split = (a > 0) & (b > 0) & (minority >= thresholds.split_share)
    low, high = c.interval.T
    close = (tie >= np.maximum(a, b)) | (np.abs(c.margin) < thresholds.gap)
    close |= ~((low > 0) | (high < 0))
    outcome = np.where(close, 1, 0)
    outcome = np.where(split, 2, outcome)
    return np.where(c.counted < thresholds.min_judges, 3, outcome)


def _intervals(
    calls: NDArray[np.int8],
    w: NDArray[np.float64],
    counts: NDArray[np.bool_],
    confidence: float,
    seed: int,
) -> NDArray[np.float64]:
    """Percentile bootstrap over the counted judges of each row of calls.

    The interval is a function of the evidence alone, up to which option is called A:

    * Within a row the counted judges are put in two canonical orders, A-first (A, then B,
      then tie, by weight within each) and B-first (B, then A, then tie), and every row with
      ``m`` counted judges resamples both orders with the same :data:`N_BOOT` draws
      (``default_rng([seed, m])``), pooling the replicates. Relabelling A and B swaps the two
      orders and negates every replicate, so the pooled replicates are negated exactly and
      the interval is mirrored exactly (sorting by the verdict's code alone, as before, gave
      a mirrored table other draws: one weighted decision went from too close to a winner).
    * The bounds are taken symmetrically (:func:`debate.stats._quantiles.percentile_interval`),
      so that mirrored replicates give bit-for-bit mirrored bounds.
    * Items with equal evidence (the same verdicts with the same weights), whichever judges
      gave it, get equal intervals.
    """
    out = np.full((calls.shape[0], 2), np.nan)
    b_first = np.where((calls == 0) | (calls == 1), 1 - calls, calls)
    arranged = []
    for key in (calls, b_first):
        order = np.lexsort((w, key, ~counts), axis=1)
        arranged.append((np.take_along_axis(calls, order, 1), np.take_along_axis(w, order, 1)))
    m_per_item = counts.sum(axis=1)
    for m in np.unique(m_per_item[m_per_item >= 2]):
        rows = np.flatnonzero(m_per_item == m)
        signed = [w_[rows, :m] * _SIGN[c[rows, :m].astype(np.int64)] for c, w_ in arranged]
        weights = [w_[rows, :m] for _, w_ in arranged]
        out[rows] = _pattern_bounds(signed, weights, confidence, seed)
    return out


def _pattern_bounds(
    signed: list[NDArray[np.float64]],
    w: list[NDArray[np.float64]],
    confidence: float,
    seed: int,
) -> NDArray[np.float64]:
    """Interval of the margin for each row of ``m`` counted judges, in both arrangements.

    ``signed`` and ``w`` hold each arrangement's rows x m contributions and weights; the
    same :data:`N_BOOT` draws resample each, and the replicates are pooled.
    """
    m = signed[0].shape[1]
    draws = np.random.default_rng([seed, m]).integers(0, m, size=(N_BOOT, m))
    times = np.zeros((N_BOOT, m))
    np.add.at(times, (np.arange(N_BOOT)[:, None], draws), 1.0)
    margins = np.concatenate(
        [(s @ times.T) / (weights @ times.T) for s, weights in zip(signed, w, strict=True)],
        axis=1,
    )
    return percentile_interval(margins, confidence, in_place=True)


def _fields(
    k: int,
    item: int,
    table: VerdictTable,
    matrix: VerdictMatrix,
    c: _Columns,
    weights: dict[str, float],
    thresholds: Thresholds,
) -> dict[str, Any]:
    """An :class:`ItemDecision`'s fields but its name, for the ``k``-th decided item."""
    calls = c.calls[k]
    outcome = _OUTCOMES[c.outcome[k]]
    total = float(c.weighted[k].sum())
    shares = None
    if total > 0:
        shares = dict(zip(VERDICTS, map(float, c.weighted[k] / total), strict=True))
    margin = float(c.margin[k]) if total > 0 else None
    low, high = map(float, c.interval[k])
    interval = None if np.isnan(low) else (low, high)
    winner = None
    if outcome == "winner":
        winner = OPTIONS[0] if c.margin[k] > 0 else OPTIONS[1]
    reasons = _reasons(outcome, k, c, table.judges, weights, thresholds)
    reasons += _notes(item, calls, table.judges, matrix, weights)
    return {
        "options": OPTIONS,
        "outcome": outcome,
        "winner": winner,
        "margin": margin,
        "interval": interval,
        "confidence": interval_confidence(interval),
        "shares": shares,
        "judge_margins": {j: _judge_margin(v) for j, v in zip(table.judges, calls, strict=True)},
        "weights": weights,
        "reasons": reasons,
    }


def _judge_margin(call: np.int8) -> float | None:
    return None if call < 0 else float(_SIGN[call])


def _reasons(
    outcome: Outcome,
    k: int,
    c: _Columns,
    judges: tuple[str, ...],
    weights: dict[str, float],
    thresholds: Thresholds,
) -> list[str]:
    a, b, tie = c.weighted[k]
    if outcome == "insufficient":
        return [
            f"only {c.counted[k]} of {len(judges)} judges gave a verdict with a positive "
            "weight; at least "
            + (
                "two are needed"
                if thresholds.min_judges == 2
                else f"{thresholds.min_judges} are needed (thresholds.min_judges)"
            )
        ]
    if outcome == "irreconcilable":
        share = min(a, b) / (a + b)
        return [_split_reason(c.calls[k], judges, weights, share, thresholds.split_share)]
    shares = c.weighted[k] / c.weighted[k].sum()
    share_text = ", ".join(f"{v} {s:.0%}" for v, s in zip(VERDICTS, shares, strict=True))
    low, high = c.interval[k]
    interval = f"the {thresholds.confidence:.0%} interval of the margin [{low:+.3f}, {high:+.3f}]"
    if outcome == "winner":
        side = OPTIONS[0] if a > b else OPTIONS[1]
        return [
            f"{side} is preferred ({share_text} of the weighted verdicts): margin "
            f"{c.margin[k]:+.3f}; {interval} excludes 0"
        ]
    weighted = (float(a), float(b), float(tie))
    return _close_reasons(weighted, float(c.margin[k]), interval, share_text, thresholds)


def _close_reasons(
    weighted: tuple[float, float, float],
    margin: float,
    interval: str,
    share_text: str,
    thresholds: Thresholds,
) -> list[str]:
    a, b, tie = weighted
    if tie >= max(a, b):
        if a == b:  # neither leads: naming one would break the A<->B mirror
            return [f"tie holds at least as much weight as A and as B ({share_text})"]
        lead = "A" if a > b else "B"
        return [f"tie holds at least as much weight as {lead}, the leading side ({share_text})"]
    if abs(margin) < thresholds.gap:
        return [f"the A-B margin {margin:+.3f} is within {thresholds.gap} ({share_text})"]
    return [f"{interval} includes 0: the lead could be chance ({share_text})"]


def _split_reason(
    calls: NDArray[np.int8],
    judges: tuple[str, ...],
    weights: dict[str, float],
    minority: float,
    split_share: float,
) -> str:
    said = []
    for code, verdict in enumerate(VERDICTS):
        who = [j for j, v in zip(judges, calls, strict=True) if v == code and weights[j] > 0]
        if who:
            said.append(f"{', '.join(who)} said {verdict}")
    return (
        f"the judges split: {'; '.join(said)}; the smaller side holds {minority:.0%} of the "
        f"weight given to A or B, at least the split share of {split_share * 100:.3g}%"
    )


def _notes(
    item: int,
    calls: NDArray[np.int8],
    judges: tuple[str, ...],
    matrix: VerdictMatrix,
    weights: dict[str, float],
) -> list[str]:
    notes = []
    for j, (name, call) in enumerate(zip(judges, calls, strict=True)):
        if call < 0:
            notes.append(f"judge {name} gave no verdict: unscored, left out of every statistic")
            continue
        if matrix.position_sensitive[item, j]:
            read = ", ".join(f"{v} reading {o}" for o, v in matrix.readings[(item, j)])
            notes.append(
                f"judge {name} is position-sensitive ({read}): its verdict follows the order "
                "of the options, so it counts as tie"
            )
        if weights[name] == 0:
            notes.append(f"judge {name} has weight 0: its verdict {VERDICTS[call]} is not counted")
    return notes
