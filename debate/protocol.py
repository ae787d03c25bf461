"""The debate: openings, cross-examination rounds, closings.

Within each stage the two sides are independent, so their calls run concurrently; the
critical path of a default debate is three debater round-trips (plus one for the judges).
A debater that cannot produce a valid move after its retries stops the debate with a
:class:`~debate.exceptions.DebaterError`; no argument is ever invented for it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from debate.calls import CallPolicy, UsageMeter, ask
from debate.events import EventHandler, Phase
from debate.exceptions import DeadlineExceeded, DebaterError, ModelOutputError, ProviderError
from debate.models.base import Message, Model, ModelSettings
from debate.prompts import PromptRenderer
from debate.replies import ArgumentDraft, ClosingDraft, ExamDraft, keyed_items, keyed_reply
from debate.schema import Argument, Closing, CrossExamination, Side, Transcript

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


async def gather_or_cancel(*calls: Awaitable[Any]) -> list[Any]:
    """Like ``asyncio.gather``, but the first failure cancels and awaits the others."""
    tasks = [asyncio.ensure_future(c) for c in calls]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


class Deadline:
    """A wall-clock budget shared by every stage of one debate."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self._end = None if seconds is None else time.monotonic() + seconds

    def remaining(self) -> float | None:
        """Seconds left, or None without a deadline."""
        return None if self._end is None else max(0.0, self._end - time.monotonic())

    async def run(self, stage: str, *calls: Awaitable[Any]) -> list[Any]:
        """Run ``calls`` concurrently; if one fails or the deadline passes, cancel the rest.

        No task outlives the stage: a failure, a timeout or Ctrl-C cancels and awaits
        every sibling before the error propagates.
        """
        try:
            return await asyncio.wait_for(gather_or_cancel(*calls), self.remaining())
        except asyncio.TimeoutError as exc:
            raise DeadlineExceeded(
                f"the debate passed its deadline of {self.seconds:g} s during the {stage}; "
                "completed calls are kept in the response cache: run the same command again "
                "to continue"
            ) from exc


@dataclass
class Debaters:
    """The model of each side."""

    pro: Model
    con: Model

    def of(self, side: Side) -> Model:
        """The model arguing ``side``."""
        return self.pro if side == "PRO" else self.con


class DebateProtocol:
    """Runs one debate and returns its transcript."""

    def __init__(
        self,
        debaters: Debaters,
        renderer: PromptRenderer,
        *,
        arguments: int,
        rounds: int,
        settings: ModelSettings,
        policy: CallPolicy,
        meter: UsageMeter,
        on_event: EventHandler | None = None,
    ) -> None:
        self.debaters = debaters
        self.renderer = renderer
        self.arguments = arguments
        self.rounds = rounds
        self.settings = settings
        self.policy = policy
        self.meter = meter
        self.on_event = on_event

    async def run(self, topic: str, *, deadline: Deadline | None = None) -> Transcript:
        """Openings, then ``rounds`` cross-examination rounds, then closings.

        Raises:
            DebaterError: a side could not produce a valid move after its retries.
            DeadlineExceeded: the deadline passed before the debaters finished.
        """
        deadline = deadline or Deadline(None)
        pro_args, con_args = await deadline.run(
            "openings", self._opening(topic, "PRO"), self._opening(topic, "CON")
        )
        arguments = [*pro_args, *con_args]
        cross: list[CrossExamination] = []
        for round_no in range(1, self.rounds + 1):
            pro_exam, con_exam = await deadline.run(
                f"cross-examination round {round_no}",
                self._cross(topic, "PRO", round_no, arguments, cross),
                self._cross(topic, "CON", round_no, arguments, cross),
            )
            cross = [*cross, *pro_exam, *con_exam]
        closings = await deadline.run(
            "closings",
            self._closing(topic, "PRO", arguments, cross),
            self._closing(topic, "CON", arguments, cross),
        )
        return Transcript(
            topic=topic, arguments=arguments, cross_examinations=cross, closings=list(closings)
        )

    def _system(self, topic: str, side: Side) -> Message:
        return Message(
            role="system",
            content=self.renderer.render("debater_system.md.jinja", side=side, topic=topic),
        )

    async def _call(
        self, side: Side, phase: Phase, round_no: int | None, messages: list[Message], schema: Any
    ) -> Any:
        try:
            completion, _ = await ask(
                self.debaters.of(side),
                messages,
                schema,
                self.settings,
                policy=self.policy,
                meter=self.meter,
                phase=phase,
                actor=side,
                round=round_no,
                on_event=self.on_event,
            )
        except (ModelOutputError, ProviderError) as exc:
            raise DebaterError(
                f"the {side} debater could not produce its {phase.replace('_', ' ')} "
                f"after its retries: {exc}"
            ) from exc
        return completion.parsed

    async def _opening(self, topic: str, side: Side) -> list[Argument]:
        ids = tuple(f"{side}-{i}" for i in range(1, self.arguments + 1))
        prompt = self.renderer.render("debater_opening.md.jinja", side=side, ids=ids)
        messages = [self._system(topic, side), Message(role="user", content=prompt)]
        reply = await self._call(side, "opening", None, messages, keyed_reply("argument", ids))
        drafts: dict[str, ArgumentDraft] = keyed_items(reply, ids)
        return [Argument(id=key, **draft.model_dump()) for key, draft in drafts.items()]

    async def _cross(
        self,
        topic: str,
        side: Side,
        round_no: int,
        arguments: list[Argument],
        cross: list[CrossExamination],
    ) -> list[CrossExamination]:
        targets = tuple(a.id for a in arguments if a.side == other(side))
        prompt = self.renderer.render(
            "debater_cross_exam.md.jinja",
            side=side,
            opponent=other(side),
            round=round_no,
            target_ids=targets,
            **transcript_view(arguments, cross, []),
        )
        messages = [self._system(topic, side), Message(role="user", content=prompt)]
        reply = await self._call(
            side, "cross_examination", round_no, messages, keyed_reply("exam", targets)
        )
        drafts: dict[str, ExamDraft] = keyed_items(reply, targets)
        return [
            CrossExamination(round=round_no, by=side, target=key, **draft.model_dump())
            for key, draft in drafts.items()
        ]

    async def _closing(
        self, topic: str, side: Side, arguments: list[Argument], cross: list[CrossExamination]
    ) -> Closing:
        prompt = self.renderer.render(
            "debater_closing.md.jinja", side=side, **transcript_view(arguments, cross, [])
        )
        messages = [self._system(topic, side), Message(role="user", content=prompt)]
        draft: ClosingDraft = await self._call(side, "closing", None, messages, ClosingDraft)
        return Closing(side=side, statement=draft.statement)
