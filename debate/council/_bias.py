"""The bias checks of one council run: length against score, harsh and generous reviewers.

ADR-010 names both: models favour verbose answers, and one reviewer scoring harshly (say
6 on average) and another generously (8) shifts raw means and Borda even though the
z-normalised ranking is immune. A council run has few candidates, so each figure carries
a small-sample 95 % interval and says when there are too few to say anything; ADR-017's
position check needs many runs and stays in ``debate audit``.
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from debate.records import (
    BiasFigure,
    Candidate,
    CouncilBias,
    Leaning,
    RankingEntry,
    Review,
    ReviewerOffset,
)
from debate.stats import Interval, correlation_interval, mean_interval


def _figure(interval: Interval) -> BiasFigure:
    return BiasFigure(**asdict(interval))


def length_figure(candidates: list[Candidate], entries: list[RankingEntry]) -> BiasFigure:
    """Correlation of each ranked candidate's length with its raw mean score."""
    text = {c.id: c.text for c in candidates}
    pairs = [(len(text[e.candidate]), e.raw_mean) for e in entries if e.raw_mean is not None]
    return _figure(correlation_interval([p[0] for p in pairs], [p[1] for p in pairs]))


def _counted(review: Review) -> dict[str, float]:
    """The overall scores that count: the reviewer's own candidates left out."""
    own = set(review.self_votes_excluded)
    return {c: v for c, v in (review.overall or {}).items() if c not in own}


def leaning(figure: BiasFigure) -> Leaning | None:
    """Harsh or generous when the interval excludes 0, else no evidence (None: no interval)."""
    if figure.low is None or figure.high is None:
        return None
    if figure.high < 0:
        return "harsh"
    if figure.low > 0:
        return "generous"
    return "no evidence"


def reviewer_offsets(reviews: list[Review]) -> list[ReviewerOffset]:
    """Each scored reviewer's mean difference from the others on the candidates both scored."""
    scored = {r.reviewer: _counted(r) for r in reviews if r.overall is not None}
    out = []
    for review in reviews:
        if review.overall is None:
            continue
        mine = scored[review.reviewer]
        differences = []
        for cid, value in mine.items():
            others = [s[cid] for name, s in scored.items() if name != review.reviewer and cid in s]
            if others:
                differences.append(value - float(np.mean(others)))
        figure = _figure(mean_interval(differences))
        out.append(
            ReviewerOffset(
                reviewer=review.reviewer,
                model=review.model,
                offset=figure,
                leaning=leaning(figure),
            )
        )
    return out


def council_bias(
    candidates: list[Candidate], reviews: list[Review], entries: list[RankingEntry]
) -> CouncilBias:
    """Both checks; ``reviews`` carry their overall scores (see ``_aggregate``)."""
    return CouncilBias(
        length=length_figure(candidates, entries), reviewers=reviewer_offsets(reviews)
    )
