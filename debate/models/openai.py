"""OpenAI-compatible backend: OpenAI itself, vLLM, Ollama, llama.cpp's server, any ``base_url``.

This is the only module that imports :mod:`openai`. Structured output goes through
``response_format`` with the JSON schema of the requested pydantic model; servers that
reject a strict schema are asked again without ``strict`` and, failing that, in plain JSON
mode. The reply comes back raw (text, usage, finish reason, refusal): it is validated above
the model boundary, like every backend's.
"""

from __future__ import annotations

import email.utils
import json
import logging
import os
import time
from collections.abc import Mapping
from typing import Any

import openai
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion

from debate.exceptions import ConfigurationError, ProviderError
from debate.models._base import Message, ModelSettings, Reply, ReplySchema, TokenUsage
from debate.models._schema import json_schema_of

logger = logging.getLogger(__name__)

LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]", "0.0.0.0")
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"


def is_local_url(base_url: str | None) -> bool:
    """True for a server on this machine, which needs no API key."""
    if base_url is None:
        return False
    rest = base_url.split("://", 1)[-1]
    return any(rest.startswith(host) for host in LOCAL_HOSTS)


def resolve_api_key(base_url: str | None, api_key_env: str = DEFAULT_API_KEY_ENV) -> str:
    """Read the key from the environment; a local server gets a placeholder."""
    key = os.environ.get(api_key_env)
    if key:
        return key
    if is_local_url(base_url):
        return "not-needed-for-a-local-server"
    where = f"for {base_url}" if base_url else "for OpenAI"
    raise ConfigurationError(
        f"no API key {where}: set the environment variable {api_key_env} "
        "(or name another variable with --api-key-env), or use --base-url for a local server"
    )


def _strictify(schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's strict mode wants every object closed and every property required."""
    if schema.get("type") == "object" and "properties" in schema:
        schema["additionalProperties"] = False
        schema["required"] = list(schema["properties"])
    for value in schema.values():
        if isinstance(value, dict):
            _strictify(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    _strictify(item)
    return schema


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class OpenAIModel:
    """A model served by any OpenAI-compatible endpoint.

    Args:
        model: Model name as the server knows it.
        client: An ``AsyncOpenAI`` client built by the caller; if omitted, one is built from
            ``base_url`` and the key in ``api_key_env``.
        base_url: Endpoint, e.g. ``http://127.0.0.1:8000/v1`` for vLLM.
        api_key: The key itself, if the caller has it; never logged or stored.
        api_key_env: Environment variable holding the key.
    """

    def __init__(
        self,
        model: str,
        *,
        client: AsyncOpenAI | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str = DEFAULT_API_KEY_ENV,
    ) -> None:
        self._model = model
        self.base_url = base_url
        self._given = client
        # Resolved now so that a missing key is reported before any work starts.
        self._key = (
            None if client is not None else (api_key or resolve_api_key(base_url, api_key_env))
        )
        self._owned: AsyncOpenAI | None = None
        self._mode = "strict"

    def _client(self) -> AsyncOpenAI:
        if self._given is not None:
            return self._given
        if self._owned is None:
            # Built lazily inside the running event loop; retries are ours (debate.runtime._ask)
            # so that every retry is counted and recorded.
            self._owned = AsyncOpenAI(api_key=self._key, base_url=self.base_url, max_retries=0)
        return self._owned

    async def aclose(self) -> None:
        """Close the HTTP client this model built (a caller's own client is left alone).

        A later call builds a fresh client, so closing at the end of each run is safe.
        """
        if self._owned is not None:
            owned, self._owned = self._owned, None
            await owned.close()

    @property
    def name(self) -> str:
        """Model name as sent to the server."""
        return self._model

    def __repr__(self) -> str:
        return f"OpenAIModel(model={self._model!r}, base_url={self.base_url!r})"

    def _response_format(self, schema: ReplySchema) -> dict[str, Any]:
        if self._mode == "json_object":
            return {"type": "json_object"}
        body = json_schema_of(schema)
        strict = self._mode == "strict"
        if strict:
            body = _strictify(body)
        return {
            "type": "json_schema",
            "json_schema": {"name": schema.__name__, "schema": body, "strict": strict},
        }

    async def complete(
        self, messages: list[Message], schema: ReplySchema, settings: ModelSettings | None = None
    ) -> Reply:
        """Send one chat completion request with ``schema`` as its response format."""
        settings = settings or ModelSettings()
        while True:
            try:
                return await self._request(messages, schema, settings)
            except openai.BadRequestError as exc:
                if self._mode == "json_object":
                    raise ProviderError(
                        f"{self._model}: request rejected ({exc.status_code})"
                    ) from exc
                # The server does not take this schema form; step down once and remember.
                self._mode = "json_schema" if self._mode == "strict" else "json_object"
                logger.info(
                    "%s rejected the schema form; retrying with %s", self._model, self._mode
                )

    async def _request(
        self, messages: list[Message], schema: ReplySchema, settings: ModelSettings
    ) -> Reply:
        payload = [m.model_dump() for m in messages]
        if self._mode == "json_object":
            hint = "Reply with one JSON object matching this JSON schema:\n"
            payload.append({"role": "system", "content": hint + json.dumps(json_schema_of(schema))})
        start = time.perf_counter()
        try:
            body: dict[str, Any] = {
                "model": self._model,
                "messages": payload,
                "response_format": self._response_format(schema),
                "temperature": settings.temperature,
                "max_tokens": settings.max_tokens,
            }
            if settings.seed is not None:
                body["seed"] = settings.seed
            # The plain POST of the chat-completions route: the same request and error types
            # as ``chat.completions.create``, without its per-call walk over the typed
            # parameters (milliseconds per call with a JSON schema in the request).
            response = await self._client().post(
                "/chat/completions",
                body=body,
                cast_to=ChatCompletion,
                options={"timeout": settings.timeout},
            )
        except openai.BadRequestError:
            raise
        except openai.APITimeoutError as exc:
            raise ProviderError(
                f"{self._model}: timed out after {settings.timeout}s", kind="timeout"
            ) from exc
        except openai.RateLimitError as exc:
            raise ProviderError(
                f"{self._model}: rate limited (429)",
                kind="rate_limited",
                retry_after=retry_after(exc.response.headers),
            ) from exc
        except openai.APIStatusError as exc:
            raise ProviderError(
                f"{self._model}: server error {exc.status_code}",
                retry_after=retry_after(exc.response.headers),
            ) from exc
        except openai.APIConnectionError as exc:
            raise ProviderError(
                f"{self._model}: cannot connect to {self.base_url or 'OpenAI'}"
            ) from exc
        return _reply(response, time.perf_counter() - start, self._model)


def _reply(response: ChatCompletion, latency: float, requested: str) -> Reply:
    """The first choice as a raw reply; a server that reports no model name gets ours."""
    choice = response.choices[0] if response.choices else None
    usage = TokenUsage()
    if response.usage is not None:
        details = getattr(response.usage, "prompt_tokens_details", None)
        usage = TokenUsage(
            prompt_tokens=response.usage.prompt_tokens or 0,
            completion_tokens=response.usage.completion_tokens or 0,
            cached_tokens=(getattr(details, "cached_tokens", 0) or 0) if details else 0,
        )
    return Reply(
        text=(choice.message.content or "") if choice else "",
        usage=usage,
        finish_reason=getattr(choice, "finish_reason", None),
        refusal=getattr(choice.message, "refusal", None) if choice else None,
        latency=latency,
        model=getattr(response, "model", None) or requested,
    )
