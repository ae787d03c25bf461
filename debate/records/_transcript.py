"""Typed records that cross a boundary: transcripts, judge evaluations, the result.

Every model is frozen and forbids extra keys, so a typo in a hand-written transcript is an
error rather than silently ignored data, and ``Model.model_validate_json(m.model_dump_json())``
gives back an equal object.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from debate.exceptions import BudgetExceeded, ModelOutputError, ProviderError

Side = Literal["PRO", "CON"]
Standing = Literal["UPHELD", "PARTIALLY_UPHELD", "REFUTED", "UNCERTAIN"]
STANDINGS: tuple[Standing, ...] = ("UPHELD", "PARTIALLY_UPHELD", "REFUTED", "UNCERTAIN")
DIMENSIONS: tuple[str, ...] = ("logic", "evidence", "responsiveness", "honesty")
Outcome = Literal["winner", "too_close", "irreconcilable", "insufficient", "escalate"]
Score = Annotated[int, Field(ge=1, le=10, strict=True)]
"""A rubric score: an integer 1-10 as given. Strict, because a score a model did not write
is a fabricated score: lax validation would read ``true`` as 1 and ``"7"`` as 7."""
UnscoredReason = Literal[
    "parse_failure",
    "schema_violation",
    "timeout",
    "provider_error",
    "refused",
    "cancelled",
    "budget",
]


def unscored(exc: ModelOutputError | ProviderError | BudgetExceeded) -> dict[str, Any]:
    """Why a call left its judge or reviewer unscored: ``reason``, ``detail``, ``raw``.

    The one mapping from a failed call to the unscored fields, so a judge and a council
    reviewer that fail the same way are recorded the same way.
    """
    if isinstance(exc, ModelOutputError):
        return {"reason": exc.reason, "detail": str(exc), "raw": exc.raw}
    if isinstance(exc, BudgetExceeded):
        return {"reason": "budget", "detail": str(exc)}
    return {"reason": "timeout" if exc.kind == "timeout" else "provider_error", "detail": str(exc)}


ARGUMENT_ID = re.compile(r"(PRO|CON)-[1-9][0-9]{0,3}")
"""Whole-string match (``fullmatch``): ``$`` would accept a trailing newline."""
MAX_TOPIC_CHARS = 2000
MAX_ARGUMENTS_PER_SIDE = 50
"""A transcript written by anyone is still read whole by every judge: past this many
arguments a side (or :data:`MAX_TRANSCRIPT_CHARS` of text) no judge's context holds it."""
MAX_TRANSCRIPT_CHARS = 500_000
MAX_ROUND = 100


def side_of(argument_id: str) -> Side:
    """The side that made an argument, read from its id: the one place its prefix is read."""
    return "PRO" if argument_id.startswith("PRO") else "CON"


class Frozen(BaseModel):
    """Base for every record: immutable, no unknown keys."""

    model_config = ConfigDict(frozen=True, extra="forbid")


def check_topic(topic: str) -> str:
    """Validate a debate topic (shared by the transcript model, the API and the CLI)."""
    if not topic or not topic.strip():
        raise ValueError("topic is empty: give the question to debate, e.g. 'Should we ...?'")
    if len(topic) > MAX_TOPIC_CHARS:
        raise ValueError(
            f"topic is {len(topic)} characters long; shorten it to at most {MAX_TOPIC_CHARS}"
        )
    return topic


class Argument(Frozen):
    """One opening argument of one side."""

    id: str
    """``PRO-1``, ``CON-2``, …: the side and a 1-based index."""
    claim: str = Field(min_length=1)
    """The claim in one sentence."""
    reasoning: str
    """Why the claim holds."""
    evidence: str
    """What supports it: figures, cases, sources."""

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        if not ARGUMENT_ID.fullmatch(value):
            raise ValueError(f"argument id {value!r} must look like PRO-1 or CON-2")
        return value

    @property
    def side(self) -> Side:
        """The side that made the argument, read from its id."""
        return side_of(self.id)


class CrossExamination(Frozen):
    """One side's answer to one argument of the other side, in one round."""

    round: int = Field(ge=1, le=MAX_ROUND)
    """1-based cross-examination round."""
    by: Side
    """The side that examines."""
    target: str
    """Id of the other side's argument under examination."""
    challenge: str
    """The question or objection put to the argument."""
    concession: str
    """What the examining side grants (may be empty)."""
    rebuttal: str
    """Why the argument still fails, in the examiner's view."""


class Closing(Frozen):
    """A side's closing statement."""

    side: Side
    statement: str


class Transcript(Frozen):
    """A whole debate: what the judges read. Can be written by anyone, not only our agents."""

    topic: str
    arguments: list[Argument]
    cross_examinations: list[CrossExamination] = Field(default_factory=list)
    closings: list[Closing] = Field(default_factory=list)

    @field_validator("topic")
    @classmethod
    def _topic(cls, value: str) -> str:
        return check_topic(value)

    @model_validator(mode="after")
    def _consistent(self) -> Transcript:
        self._within_limits()
        seen: set[str] = set()
        for argument in self.arguments:
            if argument.id in seen:
                raise ValueError(
                    f"argument id {argument.id} appears twice in arguments; give each "
                    "argument its own id (PRO-1, PRO-2, ...)"
                )
            seen.add(argument.id)
        for side in ("PRO", "CON"):
            if not any(a.side == side for a in self.arguments):
                raise ValueError(f"arguments has no {side} argument; each side needs one")
        for exam in self.cross_examinations:
            if exam.target not in seen:
                raise ValueError(
                    f"cross_examinations targets {exam.target}, which is not an argument id"
                )
            if side_of(exam.target) == exam.by:
                raise ValueError(
                    f"cross_examinations: {exam.by} examines its own argument {exam.target}"
                )
        return self

    def _within_limits(self) -> None:
        """Refuse a transcript no judge can read whole, naming the limit it passes."""
        for side in ("PRO", "CON"):
            count = sum(1 for a in self.arguments if a.side == side)
            if count > MAX_ARGUMENTS_PER_SIDE:
                raise ValueError(
                    f"arguments has {count} {side} arguments; a transcript holds at most "
                    f"{MAX_ARGUMENTS_PER_SIDE} a side"
                )
        size = sum(
            len(text)
            for record in (*self.arguments, *self.cross_examinations, *self.closings)
            for text in vars(record).values()  # the fields, as model_dump has them (flat)
            if isinstance(text, str)
        )
        if size > MAX_TRANSCRIPT_CHARS:
            raise ValueError(
                f"the transcript holds {size} characters of text; judges read at most "
                f"{MAX_TRANSCRIPT_CHARS}: shorten or split it"
            )

    @property
    def argument_ids(self) -> list[str]:
        """Argument ids in transcript order."""
        return [a.id for a in self.arguments]

    @property
    def sides(self) -> list[Side]:
        """Each argument's side, in the order of :attr:`argument_ids`."""
        return [a.side for a in self.arguments]

    def side_arguments(self, side: Side) -> list[Argument]:
        """The arguments of one side, in order."""
        return [a for a in self.arguments if a.side == side]


class RubricScore(Frozen):
    """One judge's assessment of one argument."""

    logic: Score
    evidence: Score
    responsiveness: Score
    honesty: Score
    standing: Standing
    note: str = ""
    note_cut: bool = False
    """The judge's note ran over its length limit and was cut to it (a note is commentary:
    the scores beside it are kept)."""

    def dimension(self, name: str) -> int:
        """Score on one rubric dimension by name."""
        value: int = getattr(self, name)
        return value

    def weighted(self, weights: Mapping[str, float]) -> float:
        """The argument's score under a judge's rubric weights (1-10 scale)."""
        return sum(weights[d] * self.dimension(d) for d in DIMENSIONS)


class SwapReading(Frozen):
    """The swap check: the same judge reading the transcript with the sides swapped."""

    status: Literal["scored", "unscored"]
    reason: UnscoredReason | None = None
    detail: str | None = None
    raw: str | None = None
    positions: dict[str, int]
    """Shown position of each argument in this reading."""
    scores: dict[str, RubricScore] | None = None
    position_sensitive: list[str] = Field(default_factory=list)
    """Arguments whose standing changed between the two readings."""
    consistency: float | None = None
    """Share of arguments with the same standing in both readings."""


class SampleReading(Frozen):
    """One of a judge's repeated readings (``samples > 1``): its order, seed and outcome."""

    index: int
    """1 for the judge's first reading, 2 for the next, ..."""
    seed: int | None
    """The sampling seed of this reading's call."""
    status: Literal["scored", "unscored"]
    reason: UnscoredReason | None = None
    detail: str | None = None
    raw: str | None = None
    positions: dict[str, int]
    """Shown position of each argument in this reading."""
    scores: dict[str, RubricScore] | None = None


def is_unset(value: object) -> bool:
    """Whether to leave a field out of the JSON: it was not set.

    A run without the feature then writes the same bytes as before the field existed.
    """
    return value is None


class ArgumentDeliberation(Frozen):
    """What one judge did with one split argument when shown the other judges' scores."""

    action: Literal["revise", "keep"]
    """``revise``: new scores and standing replace the first; ``keep``: the first stand."""
    reason: str = Field(min_length=1)
    """Why, in the judge's words (never empty: a move or a stand without a reason is
    re-asked)."""
    reason_cut: bool = False
    """The reason ran over its length limit and was cut to it."""


class JudgeDeliberation(Frozen):
    """One judge's deliberation call: per split argument its action, or why the call failed.

    A judge whose call failed keeps its first scores, and the failure stays here (never
    filled in with a ``keep``).
    """

    status: Literal["deliberated", "failed"]
    reason: UnscoredReason | None = None
    """Why the call failed (same reasons as an unscored judge)."""
    detail: str | None = None
    raw: str | None = None
    """The model's raw reply of a failed call."""
    attempts: int = 1
    arguments: dict[str, ArgumentDeliberation] = Field(default_factory=dict)
    """Per split argument (the arguments the judge was asked about), by id."""


class JudgeEvaluation(Frozen):
    """What one judge returned: scores for every argument, or *unscored* with the reason.

    An unscored judge keeps the model's raw output and is left out of every statistic;
    nothing is ever filled in for it.
    """

    judge: str
    role: str
    model: str
    status: Literal["scored", "unscored"]
    reason: UnscoredReason | None = None
    detail: str | None = None
    """Human-readable explanation of an unscored judge (the validation error, say)."""
    raw: str | None = None
    """The model's raw reply, kept for unscored judges."""
    scores: dict[str, RubricScore] | None = None
    """Keyed by argument id; present exactly when ``status == "scored"``."""
    key_finding: str | None = None
    key_finding_cut: bool = False
    """The key finding ran over its length limit and was cut to it (the scores are kept)."""
    attempts: int = 1
    positions: dict[str, int] = Field(default_factory=dict)
    """Shown position (0 = first) of each argument in this judge's reading."""
    swap: SwapReading | None = None
    """The second reading, sides swapped, when the swap check is on."""
    readings: list[SampleReading] | None = None
    """Every reading when the judge read more than once (``samples > 1``), scored or not;
    ``scores`` is the first scored one's, and the statistics use the mean over the scored
    ones. None for a single reading."""
    consistency: float | None = None
    """Test-retest consistency of the readings: the share of arguments whose standing is
    the same in every scored reading (None with fewer than two scored readings)."""
    standby_for: str | None = None
    """A standby judge's evaluation: the regular judge it replaced (which ended unscored)."""
    standby_reason: str | None = None
    """Why that judge was replaced: its unscored reason (and detail)."""
    first_scores: dict[str, RubricScore] | None = Field(default=None, exclude_if=is_unset)
    """With deliberation: the scores before the judge saw the others' (``scores`` is then
    the final, after deliberation). Absent without deliberation."""
    deliberation: JudgeDeliberation | None = Field(default=None, exclude_if=is_unset)
    """With deliberation: what the judge did with each split argument, or why its call
    failed. Absent without deliberation."""

    @model_validator(mode="after")
    def _status_matches(self) -> JudgeEvaluation:
        if self.status == "scored" and (self.scores is None or self.reason is not None):
            raise ValueError("a scored evaluation has scores and no reason")
        if self.status == "unscored" and (self.scores is not None or self.reason is None):
            raise ValueError("an unscored evaluation has a reason and no scores")
        return self


SIDES: tuple[Side, Side] = ("PRO", "CON")


def other(side: Side) -> Side:
    """The opposing side."""
    return "CON" if side == "PRO" else "PRO"


def transcript_view(
    arguments: list[Argument],
    cross: list[CrossExamination],
    closings: list[Closing],
    order: tuple[Side, Side] = SIDES,
) -> dict[str, Any]:
    """Template variables that render a (partial) transcript, sides in ``order``."""
    blocks = [
        {"side": side, "arguments": [a for a in arguments if a.side == side]} for side in order
    ]
    return {"blocks": blocks, "cross": cross, "closings": closings}
