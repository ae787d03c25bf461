"""Aggregation: the panel's weighted side vote, and the council's rankings.

Pure functions on arrays and mappings. Each rule (side means, the bootstrap interval, the
rubric ceiling, Borda points, z-normalised averaging and its tie test) is written out in the
docstring of the function that applies it, so this module is its own reference.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]
Confidence = Literal["high", "medium", "low"]
WEIGHT_TOLERANCE = 1e-6


def argument_variance(scores: ArrayLike) -> FloatArray:
    """Per argument (column): variance (ddof=1) across judges (rows) of the finite scores.

    The panel passes offset-corrected raw scores (1-10 scale), not calibrated ones, so that
    its variance threshold keeps its meaning. NaN where fewer than two judges scored.
    """
    x = np.asarray(scores, dtype=np.float64)
    finite = ~np.isnan(x)
    counts = finite.sum(axis=0)
    filled = np.where(finite, x, 0.0)
    sums = filled.sum(axis=0)
    out = np.full(x.shape[1], np.nan)
    ok = counts >= 2
    means = sums[ok] / counts[ok]
    squares = (np.where(finite[:, ok], x[:, ok] - means, 0.0) ** 2).sum(axis=0)
    out[ok] = squares / (counts[ok] - 1)
    return out


class SideVote(NamedTuple):
    """Weighted per-side means and their difference."""

    pro: float
    con: float
    margin: float


def _side_means(calibrated: FloatArray, is_pro: NDArray[np.bool_]) -> tuple[FloatArray, FloatArray]:
    with np.errstate(invalid="ignore"):
        pro = np.nanmean(np.where(is_pro, calibrated, np.nan), axis=-1) if is_pro.any() else None
        con = (
            np.nanmean(np.where(~is_pro, calibrated, np.nan), axis=-1) if (~is_pro).any() else None
        )
    if pro is None or con is None:
        raise ValueError("side_vote needs at least one PRO and one CON argument")
    return pro, con


def side_vote(calibrated: ArrayLike, is_pro: ArrayLike, weights: ArrayLike) -> SideVote:
    """Each judge's *mean* calibrated score per side, then the weighted mean over judges.

    Means, not sums: a side with more arguments must not gain from having them. Judges
    (rows) with no finite score are left out and their weight with them.
    """
    x = np.asarray(calibrated, dtype=np.float64)
    pro_mask = np.asarray(is_pro, dtype=bool)
    w = np.asarray(weights, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != pro_mask.size or x.shape[0] != w.size:
        raise ValueError("calibrated is judges x arguments; is_pro per argument; weights per judge")
    usable = ~np.isnan(x).all(axis=1)
    if not usable.any() or w[usable].sum() <= 0:
        raise ValueError("no judge has a score and a positive weight")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN side of one judge
        pro, con = _side_means(x[usable], pro_mask)
    wu = w[usable]
    ok = ~np.isnan(pro) & ~np.isnan(con)
    if not ok.any():
        raise ValueError("no judge scored both sides")
    wu = wu[ok] / wu[ok].sum()
    p, c = float((pro[ok] * wu).sum()), float((con[ok] * wu).sum())
    return SideVote(p, c, p - c)


def bootstrap_margin(
    calibrated: ArrayLike,
    is_pro: ArrayLike,
    weights: ArrayLike,
    *,
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int | None = 0,
) -> tuple[float, float]:
    """Percentile interval of the PRO-CON margin, resampling judges and arguments.

    Each replicate draws judges (rows, with their weights) with replacement, and arguments
    with replacement within each side, then recomputes :func:`side_vote`'s margin;
    replicates are vectorised. ``ci`` is the level of the interval, strictly between 0 and 1.
    """
    if not 0 < ci < 1:
        raise ValueError(f"ci must be a level strictly between 0 and 1, such as 0.95; got {ci!r}")
    x = np.asarray(calibrated, dtype=np.float64)
    pro_mask = np.asarray(is_pro, dtype=bool)
    w = np.asarray(weights, dtype=np.float64)
    keep = ~np.isnan(x).any(axis=1)
    x, w = x[keep], w[keep]
    if x.shape[0] == 0 or not pro_mask.any() or pro_mask.all():
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    judges = rng.integers(0, x.shape[0], size=(n_boot, x.shape[0]))
    pro_cols = np.flatnonzero(pro_mask)
    con_cols = np.flatnonzero(~pro_mask)
    pro_pick = pro_cols[rng.integers(0, pro_cols.size, size=(n_boot, pro_cols.size))]
    con_pick = con_cols[rng.integers(0, con_cols.size, size=(n_boot, con_cols.size))]
    rows = x[judges]  # n_boot x judges x arguments
    pro_mean = np.take_along_axis(rows, pro_pick[:, None, :].repeat(x.shape[0], 1), 2).mean(2)
    con_mean = np.take_along_axis(rows, con_pick[:, None, :].repeat(x.shape[0], 1), 2).mean(2)
    wj = w[judges]
    total = wj.sum(axis=1)
    valid = total > 0
    margins = ((pro_mean - con_mean) * wj).sum(axis=1)[valid] / total[valid]
    if margins.size == 0:
        return math.nan, math.nan
    tail = (1 - ci) / 2
    low, high = np.quantile(margins, [tail, 1 - tail])
    return float(low), float(high)


# --- council -------------------------------------------------------------------------

RUBRIC_WEIGHTS: dict[str, float] = {
    "accuracy": 0.35,
    "relevance": 0.10,
    "completeness": 0.20,
    "conciseness": 0.15,
    "clarity": 0.20,
}
"""The council's default rubric weights (``CouncilSettings.weights`` starts from these)."""


def check_weights(
    weights: Mapping[str, float], names: Sequence[str] | None = None
) -> dict[str, float]:
    """Rubric weights checked once for every rubric (the panel's and the council's).

    Weights are finite, non-negative and sum to 1 within :data:`WEIGHT_TOLERANCE`; with
    ``names``, exactly those keys, returned in that order.

    Raises:
        ValueError: one line naming the offending keys or the sum, and the fix.
    """
    if names is not None:
        missing = [d for d in names if d not in weights]
        extra = [k for k in weights if k not in names]
        if missing or extra:
            raise ValueError(
                f"weights need exactly {', '.join(names)}"
                + (f"; missing {', '.join(missing)}" if missing else "")
                + (f"; unknown {', '.join(extra)}" if extra else "")
            )
    negative = [k for k, v in weights.items() if not v >= 0 or not math.isfinite(v)]
    if negative:
        raise ValueError(f"weights must be non-negative numbers; fix {', '.join(negative)}")
    total = sum(weights.values())
    if abs(total - 1.0) > WEIGHT_TOLERANCE:
        raise ValueError(f"weights sum to {total:.6g}; make them sum to 1")
    return {d: float(weights[d]) for d in (weights if names is None else names)}


def rubric_overall(
    scores: Mapping[str, float],
    weights: Mapping[str, float] | None = None,
    *,
    safety_failed: bool = False,
    safety_cap: float = 0.0,
) -> float:
    """Weighted rubric score with accuracy as a ceiling and an optional safety gate.

    Accuracy below 5 caps the overall at 4.0, below 7 at 7.0: a well-written wrong answer
    cannot rank well. A response that failed the safety gate is capped at ``safety_cap``.

    Raises:
        ValueError: weights that are negative or do not sum to 1, or a weighted dimension
            missing from ``scores`` (it is never filled in).
    """
    w = check_weights(RUBRIC_WEIGHTS if weights is None else weights)
    missing = [d for d in w if d not in scores]
    if missing:
        raise ValueError(f"scores.{missing[0]} is missing; every weighted dimension is needed")
    overall = sum(w[d] * float(scores[d]) for d in w)
    if "accuracy" in scores:
        accuracy = float(scores["accuracy"])
        if accuracy < 5:
            overall = min(overall, 4.0)
        elif accuracy < 7:
            overall = min(overall, 7.0)
    if safety_failed:
        overall = min(overall, safety_cap)
    return round(overall, 6)


@dataclass(frozen=True)
class Ranking:
    """One reviewer's vote: an order (best first), scores, or neither (abstention)."""

    reviewer: str
    order: Sequence[str] | None = None
    """Candidates best first; may be partial. ``None`` with no scores is an abstention."""
    scores: Mapping[str, float] | None = None
    """Used to derive the order only when no order is given (the order wins otherwise)."""
    authored: frozenset[str] = field(default_factory=frozenset)
    """Candidates this reviewer wrote: its votes for them are excluded."""

    def resolved(self) -> list[str] | None:
        """The order to count: the explicit ranking, else the scores' order, else None."""
        if self.order is not None:
            return list(self.order)
        if self.scores:
            return sorted(self.scores, key=lambda c: (-self.scores[c], c))  # type: ignore[index]
        return None


@dataclass(frozen=True)
class BordaEntry:
    """A candidate's Borda result."""

    candidate: str
    borda: float
    """Mean points over the votes received (1st = N-1, last = 0); 0 with no votes."""
    votes: int
    first_places: int
    rank: int
    confidence: Confidence


def _coverage(votes: int, possible: int, single: bool) -> Confidence:
    if single or possible == 0:
        return "low"
    coverage = votes / possible
    return "high" if coverage >= 0.8 else "medium" if coverage >= 0.5 else "low"


def borda(rankings: Sequence[Ranking], candidates: Sequence[str]) -> list[BordaEntry]:
    """Borda count with the council rules.

    Self-votes are excluded, abstentions skipped, partial rankings use the positions
    given, unknown candidates ignored; ties are broken by first places, then by name; a
    candidate with no votes ranks last; with a single voting reviewer every result is low
    confidence; otherwise confidence follows vote coverage (>= 0.8 high, >= 0.5 medium).
    """
    n = len(candidates)
    known = set(candidates)
    points: dict[str, list[int]] = {c: [] for c in candidates}
    firsts = dict.fromkeys(candidates, 0)
    possible = dict.fromkeys(candidates, 0)
    voters = 0
    for ranking in rankings:
        order = ranking.resolved()
        if order is None:
            continue
        voters += 1
        for c in candidates:
            if c not in ranking.authored:
                possible[c] += 1
        for position, candidate in enumerate(order):
            if candidate not in known or candidate in ranking.authored:
                continue
            points[candidate].append(n - 1 - position)
            if position == 0:
                firsts[candidate] += 1
    rows = [(c, float(np.mean(p)) if p else 0.0, len(p), firsts[c]) for c, p in points.items()]
    rows.sort(key=lambda r: (r[2] == 0, -r[1], -r[3], r[0]))
    return [
        BordaEntry(c, score, votes, first, i + 1, _coverage(votes, possible[c], voters == 1))
        for i, (c, score, votes, first) in enumerate(rows)
    ]


@dataclass(frozen=True)
class NormalizedEntry:
    """A candidate's normalised score average."""

    candidate: str
    mean_score: float
    std_error: float
    votes: int
    tied_with_next: bool
    rank: int


def normalized_scores(
    scores_by_reviewer: Mapping[str, Mapping[str, float]],
    *,
    authored: Mapping[str, frozenset[str]] | None = None,
    z: float = 1.96,
    tiebreak: Mapping[str, float] | None = None,
) -> list[NormalizedEntry]:
    """Z-normalise each reviewer's scores, average per candidate, flag ties.

    Self-votes are removed before normalising. The spread is
    the population standard deviation (ddof=0) both for a reviewer's z-scores and for a
    candidate's standard error ``std / sqrt(n)`` (0 with one vote); a reviewer whose
    scores do not vary (std < 0.001) contributes zeros. Exact ties in the mean are broken
    by ``tiebreak`` (e.g. Borda), then by name. Adjacent candidates are flagged tied when
    ``mean_i - z*se_i < mean_next + z*se_next``.
    """
    authored = authored or {}
    per_candidate: dict[str, list[float]] = {}
    for reviewer, scores in scores_by_reviewer.items():
        own = authored.get(reviewer, frozenset())
        kept = {c: float(v) for c, v in scores.items() if c not in own}
        if not kept:
            continue
        values = np.array(list(kept.values()))
        std = float(values.std())
        mean = float(values.mean())
        for candidate, value in kept.items():
            normalised = 0.0 if std < 0.001 else (value - mean) / std
            per_candidate.setdefault(candidate, []).append(normalised)
    rows = []
    for candidate, values_ in per_candidate.items():
        arr = np.array(values_)
        se = float(arr.std() / math.sqrt(arr.size)) if arr.size > 1 else 0.0
        rows.append((candidate, float(arr.mean()), se, int(arr.size)))
    tb = tiebreak or {}
    rows.sort(key=lambda r: (-r[1], -tb.get(r[0], 0.0), r[0]))
    entries = []
    for i, (candidate, mean, se, votes) in enumerate(rows):
        tied = False
        if i + 1 < len(rows):
            nxt = rows[i + 1]
            tied = mean - z * se < nxt[1] + z * nxt[2]
        entries.append(NormalizedEntry(candidate, mean, se, votes, tied, i + 1))
    return entries
