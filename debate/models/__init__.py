"""Model backends behind one protocol, and the factory that picks one from a name.

Backends return raw :class:`Reply` objects; parsing them is the runtime's job
(:func:`debate.runtime._ask.ask`).
"""

from __future__ import annotations

from debate.models._base import Message, Model, ModelSettings, Reply, TokenUsage
from debate.models.test import FunctionModel, ScriptedModel, TestModel

__all__ = [
    "FunctionModel",
    "Message",
    "Model",
    "ModelSettings",
    "Reply",
    "ScriptedModel",
    "TestModel",
    "TokenUsage",
    "resolve_model",
]

LOCAL = "local"
SCRIPTED = "scripted"


def resolve_model(
    name: str,
    *,
    base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    model_path: str | None = None,
    seed: int = 0,
) -> Model:
    """Build the model a name stands for.

    ``local`` is the embedded llama.cpp model (``model_path`` for another GGUF file);
    ``scripted`` (or ``scripted-<anything>``) is the offline placeholder model; any other
    name is a model served by an OpenAI-compatible endpoint (``base_url``, or OpenAI).
    """
    if base_url is None and model_path is not None:
        name = LOCAL
    if name.startswith(SCRIPTED) and base_url is None:
        return TestModel(seed=seed, name=name)
    if name == LOCAL and base_url is None:
        from debate.models.local import LocalModel

        return LocalModel(model_path, seed=seed)
    from debate.models.openai import OpenAIModel

    return OpenAIModel(name, base_url=base_url, api_key_env=api_key_env)
