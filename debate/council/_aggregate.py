"""From reviews to the council's ranking (pure computation on :mod:`debate.stats`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from debate.council._bias import council_bias
from debate.panel import confidence, margin_evidence
from debate.records import (
    COUNCIL_DIMENSIONS,
    NO_CALL,
    Candidate,
    CouncilAgreement,
    CouncilResult,
    CouncilSettings,
    RankingEntry,
    Review,
    RunConfig,
    TopPair,
    UnrankedEntry,
    Usage,
)
from debate.stats import (
    BordaEntry,
    NormalizedEntry,
    Ranking,
    accuracy_ceiling,
    borda,
    ceiling_order,
    intervals_tie,
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
    """Entries tied with the next one in the given order (:func:`intervals_tie`)."""
    return {
        current
        for current, following in zip(order, order[1:], strict=False)
        if current in means
        and following in means
        and intervals_tie(
            (means[current], errors[current]), (means[following], errors[following]), z
        )
    }


def _names(group: list[str]) -> str:
    return group[0] if len(group) == 1 else ", ".join(group[:-1]) + " and " + group[-1]


def _tie_groups(entries: list[RankingEntry]) -> list[str]:
    """The clear winner or the tied group at the top, then the other tied groups."""
    groups: list[list[str]] = [[]]
    for entry in entries:
        groups[-1].append(entry.candidate)
        if not entry.tied_with_next:
            groups.append([])
    groups = [g for g in groups if g]
    top = groups[0]
    if len(top) == 1:
        parts = [f"{top[0]} is the clear winner"]
    else:
        parts = [f"{_names(top)} are statistically tied for first place"]
    return parts + [f"{_names(g)} are statistically tied" for g in groups[1:] if len(g) > 1]


def interpretation(
    entries: list[RankingEntry], unranked: list[UnrankedEntry], reviewers_scored: int
) -> str:
    """One sentence: who wins or ties, who could not be ranked, and a lone reviewer."""
    if reviewers_scored == 0:
        return "No reviewer could score."
    parts = _tie_groups(entries) if entries else ["No two candidates could be ranked"]
    self_only = [u.candidate for u in unranked if u.reason == "only_self_votes"]
    if self_only:
        whose, them = ("its author", "it") if len(self_only) == 1 else ("their authors", "them")
        parts.append(f"{_names(self_only)} cannot be ranked: only {whose} reviewed {them}")
    alone = [u.candidate for u in unranked if u.reason == "no_rival"]
    if alone:
        parts.append(
            f"{alone[0]} is the only candidate others reviewed: nothing to rank it against"
        )
    if reviewers_scored == 1:
        parts.append("only one reviewer scored, so this is its ranking alone (low confidence)")
    return "; ".join(parts) + "."


@dataclass(frozen=True)
class _Votes:
    """The scored reviews as the statistics take them, self-votes marked."""

    ids: list[str]
    """The candidates that can be ranked: someone other than their author scored them."""
    authored: dict[str, frozenset[str]]
    """Per reviewer, the candidates it wrote (its votes for them do not count)."""
    by_reviewer: dict[str, dict[str, float]]
    """Per reviewer, the overall score of each rankable candidate."""
    rankings: list[Ranking]


def _rankable(
    scored: list[Review], candidates: list[Candidate]
) -> tuple[list[str], list[UnrankedEntry]]:
    """Candidates some reviewer other than their author scored, and the others with why.

    A candidate whose every vote is a self-vote has no vote that counts: it is reported
    as not rankable rather than ranked last; a lone rankable candidate has no rival.
    """
    if not scored:
        return [], [UnrankedEntry(candidate=c.id, reason="no_reviews") for c in candidates]
    reviewed = [
        c.id
        for c in candidates
        if any(c.id in (r.overall or {}) and c.id not in r.self_votes_excluded for r in scored)
    ]
    unranked = [
        UnrankedEntry(candidate=c.id, reason="only_self_votes")
        for c in candidates
        if c.id not in reviewed
    ]
    if len(reviewed) < 2:
        return [], unranked + [UnrankedEntry(candidate=c, reason="no_rival") for c in reviewed]
    return reviewed, unranked


def ballot_order(review: Review) -> list[str] | None:
    """The reviewer's ranking with the accuracy ceiling enforced (ADR-016, every method).

    The rubric methods get the ceiling through the capped overall scores; Borda counts
    the explicit ranking, so the ceiling is applied to the ranking itself: an answer is
    moved below every answer the same reviewer scored above its ceiling
    (:func:`debate.stats.ceiling_order`).
    """
    if not review.ranking or review.scores is None or review.overall is None:
        return review.ranking
    ceilings = {
        cid: cap
        for cid, score in review.scores.items()
        if (cap := accuracy_ceiling(float(score.accuracy))) is not None
    }
    return ceiling_order(review.ranking, review.overall, ceilings)


def _votes(scored: list[Review], ids: list[str]) -> _Votes:
    authored = {r.reviewer: frozenset(r.self_votes_excluded) for r in scored}
    rankings = [
        Ranking(
            reviewer=r.reviewer,
            order=ballot_order(r),
            scores=r.overall,
            authored=authored[r.reviewer],
        )
        for r in scored
    ]
    by_reviewer = {
        r.reviewer: {c: v for c, v in (r.overall or {}).items() if c in ids} for r in scored
    }
    return _Votes(ids, authored, by_reviewer, rankings)


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
    if method == "borda":  # the listing order: shared ranks broken by first places, name
        listing = list(borda_rows)
        return sorted(ids, key=listing.index)
    if method == "rubric":
        return sorted(ids, key=lambda c: (-raw.get(c, -math.inf), -borda_rows[c].borda, c))
    return sorted(ids, key=lambda c: normalized[c].rank if c in normalized else len(ids) + 1)


def _agreement(votes: _Votes, scored: int, reviews: int) -> CouncilAgreement:
    """Interval alpha over the reviewers' overall scores, self-votes left out."""
    matrix = [
        [s.get(cid) if cid not in votes.authored[r] else None for cid in votes.ids]
        for r, s in votes.by_reviewer.items()
    ]
    usable = len(matrix) >= 2 and bool(votes.ids)
    alpha = krippendorff_alpha(matrix, "interval") if usable else math.nan
    return CouncilAgreement(
        alpha=alpha if math.isfinite(alpha) else None,
        reviewers_scored=scored,
        reviewers_unscored=reviews - scored,
    )


def _rank(votes: _Votes, settings: CouncilSettings, failed: list[str]) -> list[RankingEntry]:
    """Every method's figures per candidate, in the primary method's order, ties flagged."""
    gated = [c for c in failed if c in votes.ids]
    borda_rows = {b.candidate: b for b in borda(votes.rankings, votes.ids, gated=gated)}
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
    shared = settings.method == "borda"  # equal Borda points share a rank (ADR-007)
    return [
        RankingEntry(
            candidate=cid,
            rank=borda_rows[cid].rank if shared else i + 1,
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


def top_pair(entries: list[RankingEntry], scored: list[Review]) -> TopPair | None:
    """The first two candidates as one decision: each reviewer's margin as evidence."""
    if len(entries) < 2:
        return None
    first, second = entries[0].candidate, entries[1].candidate
    margins = [
        r.overall[first] - r.overall[second]
        for r in scored
        if r.overall is not None and first in r.overall and second in r.overall
    ]
    found = confidence(margin_evidence(margins)[None, :], np.ones(len(margins)))
    lead = found.lead[0]
    return TopPair(
        first=first,
        second=second,
        lead=None if lead == NO_CALL else (first, second)[int(lead)],
        evidence=float(found.log_odds[0]),
        p_agree=None if lead == NO_CALL else float(found.p_uncalibrated[0]),
        reviewers=len(margins),
    )


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
    """Rank the candidates by the configured method; report the other methods beside it.

    The safety gate and the accuracy ceiling, when they bind, apply whatever the method:
    they cap the rubric overall (normalised and rubric methods), a gate-failed answer goes
    below the others in every Borda ballot, and a capped one below every answer its
    reviewer scored above its ceiling (:func:`ballot_order`). Candidates nobody but their
    author scored are listed as unranked.
    """
    settings = config.council
    failed = safety_failures(reviews, candidates) if settings.safety_gate else []
    reviews = [_with_overall(r, config, failed) for r in reviews]
    scored = [r for r in reviews if r.overall is not None]
    ids, unranked = _rankable(scored, candidates)
    votes = _votes(scored, ids)
    entries = _rank(votes, settings, failed) if ids else []
    return CouncilResult(
        question=question,
        candidates=candidates,
        reviews=reviews,
        method=settings.method,
        rankings=entries,
        unranked=unranked,
        agreement=_agreement(votes, len(scored), len(reviews)),
        top_pair=top_pair(entries, scored),
        interpretation=interpretation(entries, unranked, len(scored)),
        safety_failed=failed,
        bias=council_bias(candidates, reviews, entries),
        usage=usage,
        config=config,
        seed=seed,
        version=version,
    )
