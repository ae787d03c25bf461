"""Model backends behind one protocol, and the factory that picks one from a name.

Backends return raw :class:`Reply` objects; parsing them is the runtime's job
(:func:`debate.runtime._ask.ask`).
"""

from __future__ import annotations

from debate.models._base import Message, Model, ModelSettings, Reply, ReplySchema, TokenUsage
from debate.models._schema import call_max_tokens, json_schema_of, schema_bytes
from debate.models.test import FunctionModel, ScriptedModel, TestModel
from debate.records import DEFAULT_ENDPOINT

__all__ = [
    "FunctionModel",
    "Message",
    "Model",
    "ModelSettings",
    "Reply",
    "ReplySchema",
    "ScriptedModel",
    "TestModel",
    "TokenUsage",
    "call_max_tokens",
    "in_process",
    "json_schema_of",
    "resolve_model",
    "schema_bytes",
]

LOCAL = "local"
SCRIPTED = "scripted"


def resolve_model(
    name: str,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    endpoint: str | None = None,
    model_path: str | None = None,
    seed: int = 0,
) -> Model:
    """Build the model a name stands for at an endpoint.

    On the ``default`` endpoint without a ``base_url``, ``local`` is the embedded llama.cpp
    model (``model_path`` for another GGUF file) and ``scripted`` (or ``scripted-<anything>``)
    the offline placeholder model. Any other name, and every name on a named endpoint, is a
    model served by an OpenAI-compatible endpoint (``base_url``, or OpenAI), which receives
    the key of ``api_key_env`` and no other (``""``: no key; ``None``: ``OPENAI_API_KEY``,
    for OpenAI's API only).
    """
    if in_process(name, base_url=base_url, endpoint=endpoint, model_path=model_path):
        if name.startswith(SCRIPTED) and model_path is None:
            return TestModel(seed=seed, name=name)
        from debate.models.local import LocalModel

        return LocalModel(model_path, seed=seed)
    from debate.models.openai import OpenAIModel

    return OpenAIModel(name, base_url=base_url, api_key_env=api_key_env, endpoint=endpoint)


def in_process(
    name: str,
    *,
    base_url: str | None = None,
    endpoint: str | None = None,
    model_path: str | None = None,
) -> bool:
    """Whether :func:`resolve_model` runs this model in this process (no server, no key).

    The embedded model (``local``, or any name with ``model_path``) and the test doubles
    (``scripted...``), on the ``default`` endpoint without a ``base_url``.
    """
    if endpoint not in (None, DEFAULT_ENDPOINT) or base_url is not None:
        return False
    return model_path is not None or name.startswith(SCRIPTED) or name == LOCAL
