"""The debate: openings, cross-examination rounds, closings.

Within each stage the two sides are independent, so their calls run concurrently; the
critical path of a default debate is three debater round-trips (plus one for the judges).
A debater that cannot produce a valid move after its retries stops the debate with a
:class:`~debate.exceptions.DebaterError`; no argument is ever invented for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from debate.exceptions import DebaterError, ModelOutputError, ProviderError
from debate.models import Message, Model, ModelSettings
from debate.records import (
    Argument,
    Closing,
    CrossExamination,
    Side,
    Transcript,
    other,
    transcript_view,
)
from debate.runtime import (
    ArgumentDraft,
    CallContext,
    ClosingDraft,
    Deadline,
    ExamDraft,
    Phase,
    PromptRenderer,
    ask,
    keyed_items,
    keyed_reply,
)


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
        call: CallContext,
    ) -> None:
        self.debaters = debaters
        self.renderer = renderer
        self.arguments = arguments
        self.rounds = rounds
        self.settings = settings
        self.call = call
        self._systems: dict[tuple[str, Side], Message] = {}

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
        """A side's system prompt, rendered once per topic: the same text for all its calls."""
        message = self._systems.get((topic, side))
        if message is None:
            content = self.renderer.render("debater_system.md.jinja", side=side, topic=topic)
            message = self._systems[topic, side] = Message(role="system", content=content)
        return message

    async def _call(
        self, side: Side, phase: Phase, round_no: int | None, messages: list[Message], schema: Any
    ) -> Any:
        try:
            completion, _ = await ask(
                self.debaters.of(side),
                messages,
                schema,
                self.settings,
                self.call,
                phase=phase,
                actor=side,
                round=round_no,
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
