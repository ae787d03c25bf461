"""Progress events.

The package never prints; it reports each step of a run to an optional ``on_event``
callback, and the CLI turns events into one line each on stderr.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

Phase = Literal["opening", "cross_examination", "closing", "topic", "judge", "council"]


@dataclass(frozen=True)
class StepStarted:
    """A model call for one step began."""

    phase: Phase
    actor: str
    """``PRO``, ``CON`` or a judge name."""
    round: int | None = None


@dataclass(frozen=True)
class StepFinished:
    """A step ended (successfully or not), with its cost."""

    phase: Phase
    actor: str
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


Event = StepStarted | StepFinished
EventHandler = Callable[[Event], None]
