"""The JSON schema of a reply model, as backends send it or turn it into a grammar."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from debate.models._base import ReplySchema


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
