"""Aggregation: the panel's weighted side vote, and the council's rankings.

Pure functions on arrays and mappings. Each rule (side means, the bootstrap interval, the
rubric ceiling, Borda points, z-normalised averaging and its tie test) is written out in the
docstring of the function that applies it, so this module is its own reference.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from debate._checks import repeated
from debate.stats._batched import bootstrap_margin_batch
from debate.stats._plain import RUBRIC_SCALE, RUBRIC_WEIGHTS, check_weights

FloatArray = NDArray[np.float64]
Confidence = Literal["high", "medium", "low"]


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
    """Each judge's (row's) mean per side; NaN for a judge with no score on a side."""
    if not is_pro.any() or is_pro.all():
        raise ValueError("side_vote needs at least one PRO and one CON argument")
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN side of one judge
        pro = np.nanmean(np.where(is_pro, calibrated, np.nan), axis=-1)
        con = np.nanmean(np.where(~is_pro, calibrated, np.nan), axis=-1)
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
    replicates are vectorised. When a side has more than one argument, ``n_boot`` replicates
    draw PRO's arguments first and ``n_boot`` more CON's, pooled, so that swapping the sides
    gives exactly the mirrored interval. ``ci`` is the level of the interval, strictly
    between 0 and 1.
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
    # One implementation of the draws and the percentiles: the batched one, which gives
    # this function's exact figures for a batch of one item (tests/stats/test_stats_batched.py).
    low, high = bootstrap_margin_batch(x[None], pro_mask, w[None], n_boot=n_boot, ci=ci, seed=seed)[
        0
    ]
    return float(low), float(high)


# --- council -------------------------------------------------------------------------

TIE_TOLERANCE = 1e-9
"""Interval ends this close count as touching: means that are equal but for the rounding
of different sums must be tied, never ordered by a last-bit difference."""


def _number(value: object, where: str) -> float:
    """A finite real number, or a ValueError naming ``where`` and the fix."""
    if isinstance(value, bool | np.bool_) or not isinstance(
        value, int | float | np.integer | np.floating
    ):
        raise ValueError(f"{where} is {value!r}; give a number")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{where} is {number}; give a finite number (leave a missing one out)")
    return number


def _names(values: object, where: str) -> list[str]:
    """Candidate names given as a collection of strings (a lone string is refused)."""
    if isinstance(values, str) or not isinstance(values, Collection):
        raise ValueError(f"{where} must be a list or set of candidate names, not {values!r}")
    bad = [v for v in values if not isinstance(v, str)]
    if bad:
        raise ValueError(f"{where} holds {bad[0]!r}; candidate names are strings")
    return list(values)


def _rubric_scores(scores: Mapping[str, float], dimensions: Sequence[str]) -> dict[str, float]:
    """The weighted dimensions (and accuracy, the ceiling) as numbers on the 1-10 scale."""
    missing = [d for d in dimensions if d not in scores]
    if missing:
        raise ValueError(f"scores.{missing[0]} is missing; every weighted dimension is needed")
    low, high = RUBRIC_SCALE
    checked = {}
    for d in [*dimensions, *(["accuracy"] if "accuracy" in scores else [])]:
        value = _number(scores[d], f"scores.{d}")
        if not low <= value <= high:
            raise ValueError(f"scores.{d} is {value:g}; rubric scores run from {low:g} to {high:g}")
        checked[d] = value
    return checked


ACCURACY_CEILINGS: tuple[tuple[float, float], ...] = ((5.0, 4.0), (7.0, 7.0))
"""ADR-016's ceiling: (accuracy below this, overall at most this), strictest first."""


def accuracy_ceiling(accuracy: float) -> float | None:
    """The most an answer of this accuracy may score overall (None: no ceiling).

    Accuracy is a prerequisite, not just a weight: below 5 the overall is capped at 4.0,
    below 7 at 7.0 (ADR-016), whatever the other dimensions say.
    """
    for below, cap in ACCURACY_CEILINGS:
        if accuracy < below:
            return cap
    return None


def ceiling_order(
    order: Sequence[str], scores: Mapping[str, float], ceilings: Mapping[str, float]
) -> list[str]:
    """A reviewer's ranking with every ceiling enforced: the ranking wins, within its caps.

    A candidate with a ceiling is moved down below every candidate the same reviewer
    scored above that ceiling, so a reviewer cannot rank a well-written wrong answer above
    an answer it scored higher than the wrong one may ever score: the accuracy ceiling
    binds Borda as it binds the rubric. A candidate so scored but missing from a partial
    ranking is placed just above the capped one (the scores say it belongs there). Other
    candidates keep the reviewer's order. The moves always end: a capped candidate only
    goes below candidates scored above its cap, which are never capped below it.
    """
    result = list(order)
    for _ in range(len(result) + len(scores) + 1):
        moved = False
        for capped in [c for c in result if c in ceilings]:
            above = [c for c, v in scores.items() if c != capped and float(v) > ceilings[capped]]
            missing = sorted(
                (c for c in above if c not in result), key=lambda c: (-float(scores[c]), c)
            )
            here = result.index(capped)
            result[here:here] = missing
            last = max((result.index(c) for c in above), default=-1)
            here = result.index(capped)
            if last > here:
                result.insert(last, result.pop(here))
                moved = True
            moved = moved or bool(missing)
        if not moved:
            return result
    return result  # pragma: no cover - the moves end, see the docstring


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
        ValueError: weights that are negative or do not sum to 1; a weighted dimension
            missing from ``scores`` (it is never filled in) or not a number from 1 to 10;
            a ``safety_cap`` outside 0-10 (NaN would switch the gate off); a
            ``safety_failed`` that is not a bool.
    """
    w = check_weights(RUBRIC_WEIGHTS if weights is None else weights)
    checked = _rubric_scores(scores, list(w))
    cap = _number(safety_cap, "safety_cap")
    if not 0 <= cap <= RUBRIC_SCALE[1]:
        raise ValueError(f"safety_cap is {cap:g}; give a score from 0 to {RUBRIC_SCALE[1]:g}")
    if not isinstance(safety_failed, bool | np.bool_):
        raise ValueError(f"safety_failed is {safety_failed!r}; give True or False")
    overall = sum(w[d] * checked[d] for d in w)
    if "accuracy" in checked:
        ceiling = accuracy_ceiling(checked["accuracy"])
        if ceiling is not None:
            overall = min(overall, ceiling)
    if safety_failed:
        overall = min(overall, cap)
    return round(overall, 6)


@dataclass(frozen=True)
class Ranking:
    """One reviewer's vote: an order (best first), scores, or neither (abstention).

    Checked on construction: a candidate listed twice, a score that is not a finite
    number, or a lone string where a list is expected raise ``ValueError``.
    """

    reviewer: str
    order: Sequence[str] | None = None
    """Candidates best first; may be partial. Empty or ``None`` with no scores abstains."""
    scores: Mapping[str, float] | None = None
    """Used to derive the order only when the order names no candidate the reviewer may
    vote for (the order wins otherwise); equal scores share their places."""
    authored: frozenset[str] = field(default_factory=frozenset)
    """Candidates this reviewer wrote: its votes for them are excluded."""

    def __post_init__(self) -> None:
        where = f"Ranking({self.reviewer!r})"
        if self.order is not None:
            order = _names(self.order, f"{where}.order")
            twice = repeated(order)
            if twice:
                raise ValueError(
                    f"{where}.order lists {twice[0]!r} twice; list each candidate once"
                )
        if self.scores is not None:
            for candidate, value in self.scores.items():
                _number(value, f"{where}.scores[{candidate!r}]")
        object.__setattr__(self, "authored", frozenset(_names(self.authored, f"{where}.authored")))

    def resolved(self) -> list[str] | None:
        """The order to count: the explicit ranking, else the scores' order, else None."""
        if self.order:
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
    """Vote coverage (ADR-007): how well this candidate's score is measured, not how
    surely it won; low for a single voting reviewer."""


def _coverage(votes: int, possible: int, single: bool) -> Confidence:
    if single or possible == 0:
        return "low"
    coverage = votes / possible
    return "high" if coverage >= 0.8 else "medium" if coverage >= 0.5 else "low"


def _tiers(ranking: Ranking, allowed: set[str]) -> list[list[str]]:
    """The ballot best first as groups of equals, keeping only ``allowed`` candidates.

    The explicit order, when it names an allowed candidate, gives one candidate a group;
    otherwise the scores give it, equal scores sharing a group (never ordered by name).
    """
    if ranking.order:
        tiers = [[c] for c in ranking.order if c in allowed]
        if tiers:
            return tiers
    if ranking.scores:
        kept = {c: float(v) for c, v in ranking.scores.items() if c in allowed}
        return [sorted(c for c in kept if kept[c] == v) for v in sorted(set(kept.values()))[::-1]]
    return []


def _ballot(
    ranking: Ranking, candidates: Sequence[str], gated: frozenset[str]
) -> dict[str, tuple[float, bool]] | None:
    """One ballot's points and first places, or None when it counts for no one.

    The reviewer's own answers and unknown names are dropped and the rest re-ranked, its
    places spread over the full scale (first = N-1, last of the M it may rank = 0), so
    ranking its own answer first takes nothing from a rival. Gated candidates go below
    every ungated one the reviewer may rank. Equal candidates share their places' mean.
    """
    allowed = set(candidates) - ranking.authored
    tiers = _tiers(ranking, allowed)
    if not tiers:
        return None
    top = len(candidates) - 1
    step = top / (len(allowed) - 1) if len(allowed) > 1 else 0.0
    out: dict[str, tuple[float, bool]] = {}
    for group, start in (
        ([[c for c in t if c not in gated] for t in tiers], 0),
        ([[c for c in t if c in gated] for t in tiers], len(allowed - gated)),
    ):
        for tier in (t for t in group if t):
            points = top - (start + (len(tier) - 1) / 2) * step
            out.update({c: (points, start == 0 and len(tier) == 1) for c in tier})
            start += len(tier)
    return out


def borda(
    rankings: Sequence[Ranking], candidates: Sequence[str], *, gated: Collection[str] = ()
) -> list[BordaEntry]:
    """Borda count with the council rules.

    Self-votes are excluded and each ballot re-ranked without them (see :func:`_ballot`),
    abstentions (no order, no scores) skipped, partial rankings use the positions given,
    unknown candidates ignored; an empty order falls back on the reviewer's scores
    (ADR-007). Candidates in ``gated`` (failed the safety gate) rank below every other
    candidate in each ballot. Equal scores share a rank (see :func:`shared_ranks`); the
    listing puts more first places, then the name, first; a candidate with no votes ranks
    last; with a single voting reviewer every result is low
    confidence; otherwise confidence follows vote coverage (>= 0.8 high, >= 0.5 medium).

    Raises:
        ValueError: a candidate named twice, a gated name that is not a candidate, or a
            ranking that is not a :class:`Ranking`.
    """
    ids = _names(candidates, "candidates")
    if len(set(ids)) != len(ids):
        raise ValueError("candidates lists a name twice; give each candidate once")
    gate = frozenset(_names(gated, "gated"))
    if not gate <= set(ids):
        raise ValueError(f"gated names {sorted(gate - set(ids))[0]!r}, which is not a candidate")
    points: dict[str, list[float]] = {c: [] for c in ids}
    firsts = dict.fromkeys(ids, 0)
    possible = dict.fromkeys(ids, 0)
    voters = 0
    for ranking in rankings:
        if not isinstance(ranking, Ranking):
            raise ValueError(f"rankings holds {ranking!r}; give Ranking objects")
        ballot = _ballot(ranking, ids, gate)
        if ballot is None:
            continue
        voters += 1
        for c in ids:
            possible[c] += c not in ranking.authored
        for c, (p, first) in ballot.items():
            points[c].append(p)
            firsts[c] += first
    # rounded so that means equal but for the order of a sum fall to the tie-breakers
    means = {c: round(float(np.mean(p)), 9) if p else 0.0 for c, p in points.items()}
    rows = [(c, means[c], len(points[c]), firsts[c]) for c in ids]
    rows.sort(key=lambda r: (r[2] == 0, -r[1], -r[3], r[0]))
    return [
        BordaEntry(c, score, votes, first, rank, _coverage(votes, possible[c], voters == 1))
        for rank, (c, score, votes, first) in zip(shared_ranks(rows), rows, strict=True)
    ]


def shared_ranks(rows: Sequence[tuple[str, float, int, int]]) -> list[int]:
    """Competition ranks (1, 1, 3) of rows sorted best first: equal Borda scores share a rank.

    The tie-breakers (first places, then name) order the listing only; a rank is what
    the points earned (ADR-007), so two candidates with the same points are both first.
    A candidate without votes never shares the rank of one whose votes gave it 0 points.
    """
    ranks: list[int] = []
    for i, (_, score, votes, _) in enumerate(rows):
        previous = rows[i - 1] if i else None
        same = previous is not None and previous[1] == score and (previous[2] == 0) == (votes == 0)
        ranks.append(ranks[-1] if same else i + 1)
    return ranks


def intervals_tie(upper: tuple[float, float], lower: tuple[float, float], z: float) -> bool:
    """Whether two neighbours, each ``(mean, standard error)``, are statistically tied.

    Tied when the upper one's interval ``mean - z*se`` reaches the lower one's
    ``mean + z*se``: overlapping, touching (within :data:`TIE_TOLERANCE`) and equal
    means all count, since none of them shows one above the other.
    """
    return upper[0] - z * upper[1] <= lower[0] + z * lower[1] + TIE_TOLERANCE


@dataclass(frozen=True)
class NormalizedEntry:
    """A candidate's normalised score average."""

    candidate: str
    mean_score: float
    std_error: float
    votes: int
    tied_with_next: bool
    rank: int


def _checked_scores(
    scores_by_reviewer: Mapping[str, Mapping[str, float]],
    authored: Mapping[str, Collection[str]],
) -> dict[str, dict[str, float]]:
    """Each reviewer's scores as finite numbers, its self-votes left out."""
    checked = {}
    for reviewer, scores in scores_by_reviewer.items():
        if not isinstance(scores, Mapping):
            raise ValueError(f"scores_by_reviewer[{reviewer!r}] must map candidates to scores")
        own = set(_names(authored.get(reviewer, ()), f"authored[{reviewer!r}]"))
        checked[reviewer] = {
            c: _number(v, f"scores_by_reviewer[{reviewer!r}][{c!r}]")
            for c, v in scores.items()
            if c not in own
        }
    return checked


def normalized_scores(
    scores_by_reviewer: Mapping[str, Mapping[str, float]],
    *,
    authored: Mapping[str, Collection[str]] | None = None,
    z: float = 1.96,
    tiebreak: Mapping[str, float] | None = None,
) -> list[NormalizedEntry]:
    """Z-normalise each reviewer's scores, average per candidate, flag ties.

    Self-votes are removed before normalising. The spread is
    the population standard deviation (ddof=0) both for a reviewer's z-scores and for a
    candidate's standard error ``std / sqrt(n)`` (0 with one vote); a reviewer whose
    scores do not vary (std < 0.001) contributes zeros. Exact ties in the mean are broken
    by ``tiebreak`` (e.g. Borda), then by name. Adjacent candidates are flagged tied by
    :func:`intervals_tie` (equal means included).

    Raises:
        ValueError: a score that is not a finite number (leave a missing score out), a
            ``z`` that is negative or not finite, or a non-numeric ``tiebreak``.
    """
    if _number(z, "z") < 0:
        raise ValueError(f"z is {z}; give a non-negative multiple of the standard error")
    tb = {c: _number(v, f"tiebreak[{c!r}]") for c, v in (tiebreak or {}).items()}
    per_candidate: dict[str, list[float]] = {}
    for kept in _checked_scores(scores_by_reviewer, authored or {}).values():
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
    rows.sort(key=lambda r: (-r[1], -tb.get(r[0], 0.0), r[0]))
    return [
        NormalizedEntry(
            candidate,
            mean,
            se,
            votes,
            i + 1 < len(rows) and intervals_tie((mean, se), rows[i + 1][1:3], z),
            i + 1,
        )
        for i, (candidate, mean, se, votes) in enumerate(rows)
    ]
