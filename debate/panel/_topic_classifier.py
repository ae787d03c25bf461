"""Optional topic classification by a model: one small structured call.

Keyword matching (``debate.panel._topics``) is the default: free, deterministic, and easy to audit.
With ``topic_classifier = "model"`` the first judge's model picks the type instead, from a
schema whose only field is an enum of the topic table's types, so a grammar-constrained
backend cannot answer anything else. If that call fails, the keyword type is used and the
result says so (``topic_source = "keywords_fallback"``): a failed classifier never blocks a
verdict, and never passes for a model's choice.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, create_model

from debate.exceptions import BudgetExceeded, ModelOutputError, ProviderError
from debate.models import Message, Model, ModelSettings
from debate.panel._topics import TopicProfiles
from debate.records import Frozen, TopicSource
from debate.runtime import CallContext, PromptRenderer, ask

logger = logging.getLogger(__name__)


@lru_cache(maxsize=32)
def topic_reply(types: tuple[str, ...]) -> type[BaseModel]:
    """``{"topic_type": one of types}``."""
    model: type[BaseModel] = create_model(
        "TopicChoice",
        __base__=Frozen,
        topic_type=(Literal[types], ...),  # type: ignore[arg-type]
    )
    return model


async def classify_topic(
    topic: str,
    profiles: TopicProfiles,
    model: Model,
    *,
    renderer: PromptRenderer,
    settings: ModelSettings,
    call: CallContext,
) -> tuple[str, TopicSource]:
    """The model's topic type, or the keyword type when the call fails."""
    types = tuple(profiles.profiles)
    prompt = renderer.render(
        "topic_classifier.md.jinja",
        topic=topic,
        types=[(name, list(p.keywords)) for name, p in profiles.profiles.items()],
    )
    # the reply is one enum value: its derived bound is small; a cap set by hand is cut to 64
    cap = None if settings.max_tokens is None else min(settings.max_tokens, 64)
    small = settings.model_copy(update={"max_tokens": cap})
    try:
        completion, _ = await ask(
            model,
            [Message(role="user", content=prompt)],
            topic_reply(types),
            small,
            call,
            phase="topic",
            actor="classifier",
        )
    except (ModelOutputError, ProviderError, BudgetExceeded) as exc:
        # a call the budget refused is recorded in usage.skipped; the keywords still decide
        logger.warning("topic classifier failed (%s); using the keyword type", exc)
        return profiles.detect(topic), "keywords_fallback"
    parsed: Any = completion.parsed
    return str(parsed.topic_type), "model"
