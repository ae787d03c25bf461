"""A call's cache key is the digest it always was, however it is computed.

Keys are stored in users' response caches: a key that changed would make a resumed run
or a re-run pay again for every call it already made. The reference below is the key's
definition (the canonical JSON of the whole request, keys sorted); the fast path writes it
key by key with the reply schema serialized once, and must give the same digest.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from debate.models import Message, ModelSettings, json_schema_of
from debate.models.test import ScriptedModel
from debate.runtime._cached import cache_slot
from debate.runtime._replies import judge_reply
from debate.storage import ResponseCache, keyed_request, request_key

TEXTS = [
    "plain",
    'quotes " and \\ backslashes, a tab\t, a newline\n and a NUL \x00',
    "é, 中文, an emoji 🎲, a zero-width space \u200b and a lone \u2028",
]


def reference(**fields: object) -> str:
    """The key's definition: the digest of the request's fields as canonical JSON."""
    blob = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def fields_of(
    model: str,
    endpoint: str | None,
    messages: list[Message],
    reply: object,
    settings: ModelSettings,
) -> dict[str, object]:
    """Every field a call's key covers."""
    return {
        "model": model,
        "endpoint": endpoint,
        "messages": [m.model_dump() for m in messages],
        "schema": reply,
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
        "seed": settings.seed,
    }


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("endpoint", [None, "http://127.0.0.1:8080/v1"])
@pytest.mark.parametrize(
    "settings",
    [ModelSettings(), ModelSettings(temperature=0.25, max_tokens=900, seed=7)],
)
def test_the_key_is_the_digest_of_the_whole_request(
    text: str, endpoint: str | None, settings: ModelSettings
) -> None:
    messages = [Message(role="system", content="be fair"), Message(role="user", content=text)]
    reply = judge_reply(("PRO-2", "PRO-1", "CON-1"))  # an order of the ids not sorted
    expected = reference(
        **fields_of("model-é", endpoint, messages, json_schema_of(reply), settings)
    )
    assert (
        request_key("model-\u00e9", endpoint, messages, json_schema_of(reply), settings) == expected
    )
    given = json.dumps(
        json_schema_of(reply), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    assert keyed_request("model-\u00e9", endpoint, messages, given, settings) == expected


def test_a_calls_slot_carries_the_key_of_its_request(tmp_path: Path) -> None:
    model = ScriptedModel([])
    messages = [Message(role="user", content=TEXTS[1])]
    settings = ModelSettings(max_tokens=64, seed=3)
    reply = judge_reply(("PRO-1", "CON-1"))
    slot = cache_slot(ResponseCache(tmp_path / "cache.sqlite"), model, messages, reply, settings)
    assert slot is not None
    endpoint = getattr(model, "base_url", None)
    assert slot.key == reference(
        **fields_of(model.name, endpoint, messages, json_schema_of(reply), settings)
    )


def test_a_known_request_keeps_its_recorded_key() -> None:
    """Pinned: the digest a cache written by earlier versions holds for this request."""
    messages = [Message(role="user", content="say it")]
    key = request_key("m", None, messages, {"type": "object"}, ModelSettings(max_tokens=64))
    assert key == reference(
        **fields_of("m", None, messages, {"type": "object"}, ModelSettings(max_tokens=64))
    )
    assert key == PINNED


PINNED = "d21f104d05f02a2a8265edb84b8377da9d237d0aa6b90c36f794fea95515e815"
"""Computed by the key's code before it was written key by key (main at 5762224)."""
