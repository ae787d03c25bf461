"""Records of council mode: candidates, each reviewer's review, the ranking."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from debate.records._config import RunConfig
from debate.records._result import Cascade, Usage
from debate.records._transcript import Frozen, Score, UnscoredReason
from debate.stats import RUBRIC_WEIGHTS

COUNCIL_DIMENSIONS: tuple[str, ...] = tuple(RUBRIC_WEIGHTS)
"""The council's rubric dimensions: the keys of its default weights, named once."""
Method = Literal["normalized", "borda", "rubric"]


class Candidate(Frozen):
    """One candidate answer."""

    id: str = Field(min_length=1)
    text: str = Field(min_length=1)
    author_model: str | None = None
    """The model that wrote it, if a model did; its own review of it is excluded."""


class CouncilDimensions(Frozen):
    """The council rubric, each dimension an integer 1-10: in the reply and in the record."""

    accuracy: Score
    relevance: Score
    completeness: Score
    conciseness: Score
    clarity: Score


class CouncilScore(CouncilDimensions):
    """One reviewer's rubric scores for one candidate."""

    notes: str = ""
    notes_cut: bool = False
    """The reviewer's notes ran over their length limit and were cut to it (the scores are
    kept)."""
    unsafe: bool | None = None


class Review(Frozen):
    """What one reviewer returned, keyed by candidate id (labels already resolved)."""

    reviewer: str
    model: str
    status: Literal["scored", "unscored"]
    reason: UnscoredReason | None = None
    detail: str | None = None
    raw: str | None = None
    labels: dict[str, str]
    """Anonymous label shown (A, B, ...) -> candidate id."""
    positions: dict[str, int]
    """Candidate id -> shown position (0 = first)."""
    scores: dict[str, CouncilScore] | None = None
    ranking: list[str] | None = None
    """Candidate ids best first, as the reviewer ranked them (may be partial)."""
    overall: dict[str, float] | None = None
    """Rubric overall per candidate (weights, accuracy ceiling, safety gate), computed by
    the council from the scores above."""
    self_votes_excluded: list[str] = Field(default_factory=list)
    """Candidates this reviewer wrote: its scores and rank for them are not counted."""


class RankingEntry(Frozen):
    """One candidate's place in the council's ranking."""

    candidate: str
    rank: int
    mean_score: float | None
    """Mean of the reviewers' z-normalised overall scores (self-votes excluded)."""
    std_error: float | None
    raw_mean: float | None
    """Mean of the raw overall scores, shown beside the normalised mean."""
    borda: float
    votes: int
    first_places: int
    tied_with_next: bool
    confidence: Literal["high", "medium", "low"]
    """Vote coverage (ADR-007): the share of the votes it could get that it got (>= 0.8
    high, >= 0.5 medium; low with a single reviewer). It says how well this candidate's
    score is measured, not how surely it holds its place: a last place can be "high"."""
    safety_failed: bool = False


UnrankedReason = Literal["only_self_votes", "no_reviews", "no_rival"]


class UnrankedEntry(Frozen):
    """A candidate the council could not place, and why (it is never put last instead)."""

    candidate: str
    reason: UnrankedReason
    """``only_self_votes``: every reviewer that scored it wrote it; ``no_reviews``: no
    reviewer scored at all; ``no_rival``: it is the only candidate that could be ranked."""


class CouncilAgreement(Frozen):
    """Agreement among reviewers on the candidates' overall scores."""

    alpha: float | None
    reviewers_scored: int
    reviewers_unscored: int


class TopPair(Frozen):
    """The council's decision between its first two candidates, with its confidence.

    Each reviewer's evidence is its overall-score margin of the first over the second
    (a whole vote from 3 points, as for a debate's judges); ``p_agree`` is
    ``sigmoid(|evidence|)``, uncalibrated: a score that orders councils by how clear their
    first place is, named so because no labels calibrated it.
    """

    first: str
    second: str
    lead: str | None
    """The candidate the reviewers' evidence favours (None when even)."""
    evidence: float
    p_agree: float | None = Field(default=None, ge=0, le=1)
    p_agree_calibrated: bool = False
    reviewers: int
    """Reviewers who scored both (their author's own reviews excluded)."""


class BiasFigure(Frozen):
    """One bias check of a council run: a figure with its 95 % interval, or why not."""

    value: float | None
    low: float | None = None
    high: float | None = None
    n: int
    note: str | None = None
    """Why there is no value or no interval (too few candidates, no variation)."""


Leaning = Literal["harsh", "generous", "no evidence"]


class ReviewerOffset(Frozen):
    """How much one reviewer scores above (+) or below (-) the others on the same answers."""

    reviewer: str
    model: str
    offset: BiasFigure
    """Mean of (its overall score - the other reviewers' mean) over the candidates both
    scored, in rubric points, with a t interval."""
    leaning: Leaning | None
    """``harsh`` or ``generous`` when the interval excludes 0; None without an interval."""


class CouncilBias(Frozen):
    """ADR-010 and ADR-016's bias checks on one council run (position is ``debate audit``'s).

    Length can favour verbose answers; a harsh or generous reviewer moves raw means and
    Borda (z-normalisation removes its offset from the default ranking, ADR-010).
    """

    length: BiasFigure
    """Pearson r of candidate length (characters) with its raw mean score, Fisher interval;
    across candidates, so a run of fewer than four has no figure."""
    reviewers: list[ReviewerOffset] = Field(default_factory=list)


class CouncilResult(Frozen):
    """The council's answer: a ranking, its ties, and how much the reviewers agree."""

    kind: Literal["council"] = "council"
    question: str
    candidates: list[Candidate]
    reviews: list[Review]
    method: Method
    rankings: list[RankingEntry]
    unranked: list[UnrankedEntry] = Field(default_factory=list)
    """Candidates left out of ``rankings`` because no one but their author reviewed them."""
    agreement: CouncilAgreement
    top_pair: TopPair | None = None
    """The first two candidates as one decision, with ``p_agree`` (None with one ranked)."""
    interpretation: str
    safety_failed: list[str] = Field(default_factory=list)
    usage: Usage
    config: RunConfig
    seed: int
    version: str
    tier: int = Field(default=1, ge=1)
    """The cascade tier that decided: the ranking is on the reviewers of tiers 1 to
    ``tier`` together (1 without tiers)."""
    cascade: Cascade | None = None
    """The tiers asked, why, and what they cost; None in results written before tiers."""
    bias: CouncilBias | None = None
    """Length and reviewer-offset checks; None in results written before them."""

    @field_validator("question")
    @classmethod
    def _question(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("question is empty; give the question the candidates answer")
        return value

    @model_validator(mode="after")
    def _unique(self) -> CouncilResult:
        ids = [c.id for c in self.candidates]
        if len(set(ids)) != len(ids):
            raise ValueError("candidate ids must be unique")
        return self
