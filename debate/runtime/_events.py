"""Progress events.

The package never prints; it reports each step of a run to an optional ``on_event``
callback, and the CLI turns events into one line each on stderr: a human line, or with
``--progress jsonl`` the event itself as JSON (:func:`event_record`), for a program.

A step is one logical call (a debater's move, a judge's reading, a reviewer's review),
retries included: it starts once, may retry, and finishes once, ok or not. A plan says
beforehand how many steps a run will make (:func:`planned_calls`), so a progress bar can
show a fraction instead of a count.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from debate.records import RunConfig, samples_of

Phase = Literal[
    "opening", "cross_examination", "closing", "topic", "judge", "council", "deliberation"
]


@dataclass(frozen=True)
class Planned:
    """What a command is about to do: the number of steps (model calls) it will make."""

    type: ClassVar[str] = "plan"
    command: str
    """``run``, ``judge``, ``council`` or ``batch``."""
    total: int
    """Steps the command will start, each finishing once (ok or not) if nothing stops it."""
    items: int | None = None
    """Items of a batch; None for a single run."""


@dataclass(frozen=True)
class _Step:
    """What every event of a step starts with: the step's phase and actor."""

    phase: Phase
    actor: str
    """``PRO``, ``CON`` or a judge name."""


@dataclass(frozen=True)
class StepStarted(_Step):
    """A model call for one step began."""

    type: ClassVar[str] = "start"
    round: int | None = None


@dataclass(frozen=True)
class StepRetried(_Step):
    """A step's attempt failed and the step will try again."""

    type: ClassVar[str] = "retry"
    attempt: int
    """The attempt that failed (1 for the first call)."""
    reason: str
    """Why: an invalid reply (``parse_failure``, ``schema_violation``, ``refused``) or a
    provider fault (``timeout``, ``rate_limited``, ``provider_error``)."""
    round: int | None = None
    delay: float = 0.0
    """Seconds waited before the next attempt (a provider fault backs off; a re-ask does not)."""


@dataclass(frozen=True)
class StepFinished(_Step):
    """A step ended (successfully or not), with its cost."""

    type: ClassVar[str] = "finish"
    elapsed: float
    """Seconds since the step started, retries included."""
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    attempts: int
    ok: bool
    round: int | None = None
    detail: str | None = None
    model_seconds: float = 0.0
    """Time the model spent on the step's calls (queueing for a shared local model excluded)."""


@dataclass(frozen=True)
class ItemFinished:
    """A batch item ended: its result written, or its failure recorded."""

    type: ClassVar[str] = "item_finish"
    id: str
    status: Literal["ok", "failed"]
    outcome: str | None = None
    skipped: bool = False
    """Finished by an earlier run of the batch; nothing was called for it this time."""


Event = Planned | StepStarted | StepRetried | StepFinished | ItemFinished
EventHandler = Callable[[Event], None]


def event_record(event: Event) -> dict[str, Any]:
    """The event as one JSON-ready object: ``type`` and ``ts`` (Unix seconds), then its fields."""
    return {"type": event.type, "ts": round(time.time(), 3), **dataclasses.asdict(event)}


def debate_calls(config: RunConfig) -> int:
    """Steps of the debaters: each side's opening, cross-examinations and closing."""
    return 2 * (1 + config.rounds + 1)


def judge_calls(config: RunConfig) -> int:
    """Steps of the panel: each judge's readings, and a topic call if any.

    A judge makes ``samples`` readings (its own or the run's), one more with ``swap``.

    Every tier's judges are counted: the most a cascade of tiers can ask (a higher tier is
    asked only for items the lower ones could not settle). The topic call is made when a
    model classifies the topic and no type was set by hand.
    """
    swap = 1 if config.swap else 0  # the swap check mirrors a judge's first reading
    readings = sum(samples_of(j, config.samples) + swap for j in config.judges)
    classifier = config.topic_classifier == "model" and not config.topic_type
    # Deliberation: at most one call per judge a round (none when no argument is split).
    deliberation = len(config.judges) * config.deliberation.rounds
    return readings + (1 if classifier else 0) + deliberation


def planned_calls(config: RunConfig, *, debate: bool) -> int:
    """Steps of one run: the debate's (when there is one to hold) and the panel's."""
    return (debate_calls(config) if debate else 0) + judge_calls(config)
