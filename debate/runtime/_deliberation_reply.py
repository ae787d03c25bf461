"""The reply of a judge's deliberation call: per split argument, revise or keep, with a reason.

Keyed by the split arguments' ids, each a required property (as :mod:`._replies` keys a
judge's scores), so a reply that skips or invents an argument fails validation. Each entry
says ``revise`` with the new rubric scores and standing, or ``keep``; both need a reason,
and an empty one (or a ``revise`` without scores) is invalid and re-asked with the error,
never filled in. Scores sent with ``keep`` are dropped: the judge said its first assessment
stands, and refusing the whole reply for them failed every call of a small model or a
schema-filling double that fills every field.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model, model_validator
from pydantic.json_schema import SkipJsonSchema

from debate.records import Frozen
from debate.runtime._replies import RubricDraft, commentary, cut_commentary

REASON_CHARS = 300


class DeliberationDraft(Frozen):
    """A judge's decision on one split argument."""

    action: Literal["revise", "keep"]
    reason: str = commentary(REASON_CHARS)
    """Why the judge moves or stands; required and not blank."""
    reason_cut: SkipJsonSchema[bool] = False
    scores: RubricDraft | None
    """The new assessment with ``revise``; null with ``keep``, whose scores are dropped if
    given (required either way, so a strict schema or a grammar asks for it)."""

    @model_validator(mode="before")
    @classmethod
    def _cut_reason(cls, data: Any) -> Any:
        data = cut_commentary(data, {"reason": REASON_CHARS})
        if isinstance(data, dict) and data.get("action") == "keep" and data.get("scores"):
            data = {**data, "scores": None}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> DeliberationDraft:
        if not self.reason.strip():
            raise ValueError(f"{self.action} needs a reason: say why in one or two sentences")
        if self.action == "revise" and self.scores is None:
            raise ValueError("revise needs scores: give the new rubric scores and standing")
        return self


@lru_cache(maxsize=256)
def deliberation_reply(ids: tuple[str, ...]) -> type[BaseModel]:
    """``{"decisions": {id: {action, reason, scores}}}`` for every id of ``ids``."""
    fields: dict[str, Any] = {
        f"k{i}": (DeliberationDraft, Field(alias=key)) for i, key in enumerate(ids)
    }
    keyed: type[BaseModel] = create_model("Decisions", __base__=Frozen, **fields)
    model: type[BaseModel] = create_model(
        "DeliberationReply", __base__=Frozen, decisions=(keyed, ...)
    )
    return model
