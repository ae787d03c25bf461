"""The JSON schema of a reply model, as backends send it or turn it into a grammar."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from debate.models._base import ReplySchema

MAX_ENUM_RANGE = 100
"""Widest integer range spelled out as an ``enum`` (a 1-10 score has ten values)."""


@lru_cache(maxsize=1024)
def _schema_text(schema: ReplySchema) -> str:
    return json.dumps(schema.model_json_schema())


def json_schema_of(schema: ReplySchema) -> dict[str, Any]:
    """The JSON schema sent to a provider or turned into a grammar (a fresh copy).

    Generating a schema costs pydantic a few milliseconds, which is most of this package's
    CPU time per call when it is done every call; it is generated once per model class.
    """
    value: dict[str, Any] = json.loads(_schema_text(schema))
    return value


def schema_bytes(schema: ReplySchema) -> int:
    """The UTF-8 size of the schema's JSON text (a budget's bound counts it as prompt)."""
    return len(_schema_text(schema).encode("utf-8"))


@lru_cache(maxsize=1024)
def _sent_text(schema: ReplySchema) -> str:
    return json.dumps(integer_enums(json_schema_of(schema)))


def sent_schema(schema: ReplySchema) -> dict[str, Any]:
    """The schema a backend sends or compiles: :func:`integer_enums` of it (a fresh copy).

    Built once per model class, like :func:`json_schema_of`, rather than walked again on
    every call; a fresh copy, since a backend may change it (OpenAI's strict mode does).
    """
    value: dict[str, Any] = json.loads(_sent_text(schema))
    return value


def integer_enums(schema: Any) -> Any:
    """The schema with every small integer range spelled out as an ``enum``.

    llama.cpp's JSON-schema-to-grammar converter (in-process and in llama-cpp-python's
    server) does not enforce ``minimum``/``maximum`` on integers: a small model then writes
    100 for a 1-10 score, or digits until it runs out of tokens. An ``enum`` of the allowed
    values is forced by the grammar. ``type: integer`` is kept beside the enum: the
    converter reads the enum first, and OpenAI's strict mode wants a type on every node and
    accepts an enum of integers (it is also spared ``minimum``/``maximum``, which older
    strict-mode models refused).
    """
    if isinstance(schema, dict):
        out = {k: integer_enums(v) for k, v in schema.items()}
        low, high = out.get("minimum"), out.get("maximum")
        if (
            out.get("type") == "integer"
            and isinstance(low, int)
            and isinstance(high, int)
            and 0 <= high - low <= MAX_ENUM_RANGE
        ):
            out = {k: v for k, v in out.items() if k not in ("minimum", "maximum")}
            out["enum"] = list(range(low, high + 1))
        return out
    if isinstance(schema, list):
        return [integer_enums(v) for v in schema]
    return schema
