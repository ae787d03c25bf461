"""From reviews to the council's ranking (pure computation on :mod:`debate.stats`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from debate.records._config import CouncilSettings, RunConfig
from debate.records._council import (
    COUNCIL_DIMENSIONS,
    Candidate,
    CouncilAgreement,
    CouncilResult,
    RankingEntry,
    Review,
)
from debate.records._result import Usage
from debate.stats import (
    BordaEntry,
    NormalizedEntry,
    Ranking,
    borda,
    krippendorff_alpha,
    normalized_scores,
    rubric_overall,
)


def safety_failures(reviews: list[Review], candidates: list[Candidate]) -> list[str]:
    """Candidates that a strict majority of the (non-self) reviewers flagged unsafe."""
    failed = []
    for c in candidates:
        flags = [
            bool(r.scores[c.id].unsafe)
            for r in reviews
            if r.scores is not None and c.id not in r.self_votes_excluded
        ]
        if flags and sum(flags) * 2 > len(flags):
            failed.append(c.id)
    return failed


def _with_overall(review: Review, config: RunConfig, failed: list[str]) -> Review:
    if review.scores is None:
        return review
    settings = config.council
    overall = {
        cid: rubric_overall(
            {d: float(getattr(score, d)) for d in COUNCIL_DIMENSIONS},
            settings.weights,
            safety_failed=cid in failed,
            safety_cap=settings.safety_cap,
        )
        for cid, score in review.scores.items()
    }
    return review.model_copy(update={"overall": overall})


def _ties(
    order: list[str], means: dict[str, float], errors: dict[str, float], z: float
) -> set[str]:
    """Entries whose interval overlaps the next one's, in the given order."""
    tied = set()
    for current, following in zip(order, order[1:], strict=False):
        if current in means and following in means:
            low = means[current] - z * errors[current]
            high = means[following] + z * errors[following]
            if low < high:
                tied.add(current)
    return tied


def interpretation(entries: list[RankingEntry]) -> str:
    """One sentence: the clear winner or the tied group at the top, then the other ties."""
    groups: list[list[str]] = [[]]
    for entry in entries:
        groups[-1].append(entry.candidate)
        if not entry.tied_with_next:
            groups.append([])
    groups = [g for g in groups if g]

    def names(group: list[str]) -> str:
        return group[0] if len(group) == 1 else ", ".join(group[:-1]) + " and " + group[-1]

    top = groups[0]
    if len(top) == 1:
        parts = [f"{top[0]} is the clear winner"]
    else:
        parts = [f"{names(top)} are statistically tied for first place"]
    parts += [f"{names(g)} are statistically tied" for g in groups[1:] if len(g) > 1]
    return "; ".join(parts) + "."


@dataclass(frozen=True)
class _Votes:
    """The scored reviews as the statistics take them, self-votes marked."""

    ids: list[str]
    authored: dict[str, frozenset[str]]
    """Per reviewer, the candidates it wrote (its votes for them do not count)."""
    by_reviewer: dict[str, dict[str, float]]
    """Per reviewer, the overall score of each candidate."""
    rankings: list[Ranking]


def _votes(scored: list[Review], candidates: list[Candidate]) -> _Votes:
    authored = {r.reviewer: frozenset(r.self_votes_excluded) for r in scored}
    rankings = [
        Ranking(
            reviewer=r.reviewer, order=r.ranking, scores=r.overall, authored=authored[r.reviewer]
        )
        for r in scored
    ]
    by_reviewer = {r.reviewer: dict(r.overall or {}) for r in scored}
    return _Votes([c.id for c in candidates], authored, by_reviewer, rankings)


def _raw_means(votes: _Votes) -> dict[str, float]:
    """Each candidate's mean overall score over the reviewers that did not write it."""
    raw: dict[str, float] = {}
    for cid in votes.ids:
        values = [
            s[cid]
            for r, s in votes.by_reviewer.items()
            if cid not in votes.authored[r] and cid in s
        ]
        if values:
            raw[cid] = float(np.mean(values))
    return raw


def _order(
    method: str,
    votes: _Votes,
    borda_rows: Mapping[str, BordaEntry],
    normalized: Mapping[str, NormalizedEntry],
    raw: Mapping[str, float],
) -> list[str]:
    """The candidates best first by the primary method (Borda breaks ties in the others)."""
    ids = votes.ids
    if method == "borda":
        return sorted(ids, key=lambda c: borda_rows[c].rank)
    if method == "rubric":
        return sorted(ids, key=lambda c: (-raw.get(c, -math.inf), -borda_rows[c].borda, c))
    return sorted(ids, key=lambda c: normalized[c].rank if c in normalized else len(ids) + 1)


def _agreement(votes: _Votes, scored: int, reviews: int) -> CouncilAgreement:
    """Interval alpha over the reviewers' overall scores, self-votes left out."""
    matrix = [
        [s.get(cid) if cid not in votes.authored[r] else None for cid in votes.ids]
        for r, s in votes.by_reviewer.items()
    ]
    alpha = krippendorff_alpha(matrix, "interval") if len(matrix) >= 2 else math.nan
    return CouncilAgreement(
        alpha=alpha if math.isfinite(alpha) else None,
        reviewers_scored=scored,
        reviewers_unscored=reviews - scored,
    )


def _rank(votes: _Votes, settings: CouncilSettings, failed: list[str]) -> list[RankingEntry]:
    """Every method's figures per candidate, in the primary method's order, ties flagged."""
    borda_rows = {b.candidate: b for b in borda(votes.rankings, votes.ids)}
    tiebreak = {cid: borda_rows[cid].borda for cid in votes.ids}
    normalized = {
        n.candidate: n
        for n in normalized_scores(
            votes.by_reviewer, authored=votes.authored, z=settings.tie_z, tiebreak=tiebreak
        )
    }
    raw = _raw_means(votes)
    order = _order(settings.method, votes, borda_rows, normalized, raw)
    means = {c: n.mean_score for c, n in normalized.items()}
    errors = {c: n.std_error for c, n in normalized.items()}
    tied = _ties(order, means, errors, settings.tie_z)
    return [
        RankingEntry(
            candidate=cid,
            rank=i + 1,
            mean_score=means.get(cid),
            std_error=errors.get(cid),
            raw_mean=raw.get(cid),
            borda=borda_rows[cid].borda,
            votes=borda_rows[cid].votes,
            first_places=borda_rows[cid].first_places,
            tied_with_next=cid in tied,
            confidence=borda_rows[cid].confidence,
            safety_failed=cid in failed,
        )
        for i, cid in enumerate(order)
    ]


def aggregate(
    question: str,
    candidates: list[Candidate],
    reviews: list[Review],
    config: RunConfig,
    *,
    usage: Usage,
    seed: int,
    version: str,
) -> CouncilResult:
    """Rank the candidates by the configured method; report the other methods beside it."""
    settings = config.council
    failed = safety_failures(reviews, candidates) if settings.safety_gate else []
    reviews = [_with_overall(r, config, failed) for r in reviews]
    scored = [r for r in reviews if r.overall is not None]
    votes = _votes(scored, candidates)
    entries = _rank(votes, settings, failed)
    return CouncilResult(
        question=question,
        candidates=candidates,
        reviews=reviews,
        method=settings.method,
        rankings=entries,
        agreement=_agreement(votes, len(scored), len(reviews)),
        interpretation=interpretation(entries) if scored else "No reviewer could score.",
        safety_failed=failed,
        usage=usage,
        config=config,
        seed=seed,
        version=version,
    )
