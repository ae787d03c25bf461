"""OpenAI-compatible backend: OpenAI itself, vLLM, Ollama, llama.cpp's server, any ``base_url``.

This module and its HTTP part (:mod:`~debate.models._openai_http`) are the only ones that
import :mod:`openai`, and only for a caller's own client: a model that builds its own client
does not send through it (nor import it, 0.3 s a run): each request is one POST on a shared
``aiohttp`` session (:class:`_Direct`), since the SDK's per-request machinery cost more CPU
than the rest of the request at a few hundred calls in flight. A caller's own
``AsyncOpenAI`` client (``client=``) is still used as given; both fail with the same errors.
The structured-output forms and their negotiation state are :mod:`~debate.models._openai_forms`.

Structured output goes through ``response_format`` with the JSON schema of the requested
pydantic model. Servers differ in what they take, so the form is negotiated: a strict
``json_schema`` first, then a non-strict one, then ``json_object`` with the schema beside it
(llama-cpp-python's server turns that into a grammar), then plain ``json_object``; the
schema is also given in a system message in the JSON modes. Only an error that is about the
format (whatever its status code: llama-cpp-python answers ``json_schema`` with a 500)
steps down, past both ``json_schema`` forms when it says the type itself is not taken; any
other error (a prompt over the context limit, an overloaded server) is a
:class:`ProviderError` and changes nothing for later calls. The form is learned once per
endpoint and model for the life of the process (:class:`_Forms`), shared by every model
object that points there, so a run, a batch or the service probes once, not on every call.

Whatever the server sends becomes a :class:`Reply` or a :class:`ProviderError` with a
one-line reason: an HTML page, a truncated envelope, a connection reset mid-body, an empty
``choices`` list. ``settings.timeout`` bounds the whole call (connect and every byte), not
the gap between bytes. The client's own key is removed from any text the server echoes
back. The reply comes back raw (text, usage, finish reason, refusal): it is validated above
the model boundary, like every backend's.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Any

from debate.exceptions import ConfigurationError, ProviderError
from debate.models._base import Message, ModelSettings, Reply, ReplySchema, TokenUsage
from debate.models._openai_forms import (
    DEFAULT_FORM_WAIT,
    FORMAT_ERROR,
    FORMS,
    MODES,
    TYPE_REFUSED,
    Mode,
    _FormatRejected,
    _FormKey,
    _rejects_format,
)
from debate.models._openai_http import (
    JSON_HEADERS,
    OPENAI_BASE_URL,
    POOL_LIMIT,
    _connection_failure,
    _ConnectionFailed,
    _Direct,
    _env_proxy,
    _error_parts,
    _error_reason,
    _Proxy,
    _refused_connection,
    _StatusFailed,
    endpoint_url,
    request_headers,
    retry_after,
    sdk_post,
)
from debate.models._schema import call_max_tokens, sent_schema

if TYPE_CHECKING:  # imported where a caller's SDK client is used: ~0.3 s a run without one
    from openai import AsyncOpenAI

__all__ = [
    "DEFAULT_API_KEY_ENV",
    "DEFAULT_FORM_WAIT",
    "FORMAT_ERROR",
    "FORMS",
    "JSON_HEADERS",
    "MIN_SECRET_LENGTH",
    "MODES",
    "OPENAI_BASE_URL",
    "POOL_LIMIT",
    "REDACTED",
    "SCHEMA_HINT",
    "TYPE_REFUSED",
    "Mode",
    "OpenAIModel",
    "endpoint_url",
    "request_body",
    "request_headers",
    "resolve_api_key",
    "response_format",
    "retry_after",
]

logger = logging.getLogger(__name__)

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 8
"""Shorter keys are not redacted: replacing a 3-letter string everywhere would mangle text."""

SCHEMA_HINT = "Reply with one JSON object matching this JSON schema:\n"


def resolve_api_key(
    base_url: str | None, api_key_env: str | None = None, endpoint: str | None = None
) -> str | None:
    """The key of one endpoint from its own variable; ``None`` for a keyless endpoint.

    ``api_key_env`` ``""`` declares the endpoint keyless. ``None`` reads ``OPENAI_API_KEY``
    for OpenAI's API and is refused for any other host, so OpenAI's key never goes to a
    host it was not named for. Nothing is guessed from the host name.

    Raises:
        ConfigurationError: the variable is not set, or no variable was named for a host
            other than OpenAI's; the message names the endpoint and the variable.
    """
    where = f"endpoint {endpoint!r}" if endpoint else "the model"
    host = base_url or "OpenAI's API"
    if api_key_env is None:
        if base_url is not None:
            raise ConfigurationError(
                f"api_key_env: {where} ({host}) names no key variable, and "
                f"{DEFAULT_API_KEY_ENV} is sent only to OpenAI's API; name the variable "
                '(api_key_env, --api-key-env NAME), or give "" for a server without a key'
            )
        api_key_env = DEFAULT_API_KEY_ENV
    if api_key_env == "":
        return None
    key = os.environ.get(api_key_env)
    if key:
        return key
    raise ConfigurationError(
        f"no API key for {where} ({host}): set the environment variable {api_key_env}, "
        'or declare the endpoint keyless with api_key_env = "" (--api-key-env "")'
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


class OpenAIModel:
    """A model served by any OpenAI-compatible endpoint.

    Args:
        model: Model name as the server knows it.
        client: An ``AsyncOpenAI`` client built by the caller; if omitted, one is built from
            ``base_url`` and the key in ``api_key_env``.
        base_url: Endpoint, e.g. ``http://127.0.0.1:8000/v1`` for vLLM.
        api_key: The key itself, if the caller has it; never logged or stored.
        api_key_env: Environment variable holding the key; ``""`` for a server without a
            key (no Authorization header is sent). ``None`` reads ``OPENAI_API_KEY`` for
            OpenAI's API and is refused with a ``base_url``.
        endpoint: The endpoint's name, recorded with every call (``usage.per_call``).
    """

    def __init__(
        self,
        model: str,
        *,
        client: AsyncOpenAI | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        endpoint: str | None = None,
    ) -> None:
        self._model = model
        self.base_url = base_url
        self.endpoint = endpoint
        self._given = client
        # Resolved now so that a missing key is reported before any work starts.
        self._key = (
            None
            if client is not None
            else (api_key or resolve_api_key(base_url, api_key_env, endpoint))
        )
        self._owned: _Direct | None = None
        self._building = threading.Lock()
        where = base_url if client is None else str(client.base_url)
        self._form_key: _FormKey = (endpoint_url(where), model)
        """Where the structured-output form is learned (:data:`FORMS`)."""

    async def _client(self) -> AsyncOpenAI | _Direct:
        """The HTTP client: the caller's SDK client, or our own session built on first use.

        Our own is built again after :meth:`aclose`. Importing aiohttp loads the CA
        certificates (about 0.15 s of CPU), and the proxy lookup reads files; that is done
        in a worker thread, since ``timeout`` bounds each call's wall time and the work on
        the event loop would be charged to every other call in flight. The session is then
        made on the loop with no await in between, so the first calls of a run, which
        arrive together (a service starting 64 jobs sends 160), share one.
        """
        if self._given is not None:
            return self._given
        if self._owned is None:
            url = endpoint_url(self.base_url)
            proxy = await asyncio.to_thread(self._build_once, url)
            if self._owned is None:
                self._owned = _Direct(url, request_headers(url, self._key), proxy)
        return self._owned

    def _build_once(self, url: str) -> _Proxy:
        with self._building:  # one at a time: the first import makes the rest cheap
            return _env_proxy(url)

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
        return (
            f"OpenAIModel(model={self._model!r}, base_url={self.base_url!r}, "
            f"endpoint={self.endpoint!r})"
        )

    def mode(self) -> Mode:
        """The structured-output form requests are sent in now (per endpoint and model)."""
        return FORMS.mode(self._form_key)

    def _redact(self, text: str) -> str:
        """``text`` without this client's key (a server may echo the Authorization header)."""
        key = self._key if self._given is None else self._given.api_key
        if not key or len(key) < MIN_SECRET_LENGTH:
            return text
        return text.replace(key, REDACTED)

    async def complete(
        self, messages: list[Message], schema: ReplySchema, settings: ModelSettings | None = None
    ) -> Reply:
        """Send one chat completion request with ``schema`` as its response format.

        A server that refuses the form of the format is asked again in a form further down,
        and that form is kept for every later call to this endpoint and model.
        """
        settings = settings or ModelSettings()
        await self._client()  # built before any wait for a probe: the wait is for its answer
        while True:
            mode, probe = await FORMS.claim(self._form_key)
            try:
                reply = await self._request(messages, schema, settings, mode, probe is not None)
            except _FormatRejected as exc:
                self._step_down(mode, exc)
                continue
            finally:
                FORMS.release(probe)
            FORMS.answered(self._form_key, mode)
            return reply

    def _step_down(self, mode: Mode, exc: _FormatRejected) -> None:
        """Remember the form below ``mode``; none left is a provider error."""
        index = MODES.index(mode) + 1
        if mode in ("strict", "json_schema") and exc.type_refused:
            index = MODES.index("json_object_schema")  # the type itself is not taken
        if index == len(MODES):
            raise ProviderError(f"{self._model}: {exc.reason}") from exc.__cause__
        now = FORMS.step_down(self._form_key, MODES[index])
        logger.info("%s refused %s (%s); now using %s", self._model, mode, exc.reason, now)

    async def _request(
        self,
        messages: list[Message],
        schema: ReplySchema,
        settings: ModelSettings,
        mode: Mode,
        probing: bool = False,
    ) -> Reply:
        body = request_body(self._model, messages, schema, settings, mode)
        start = time.perf_counter()
        text = await self._post(body, settings.timeout, probing)
        return self._reply(text, time.perf_counter() - start)

    def _probe_connected(self, seconds: float) -> None:
        FORMS.connected(self._form_key, seconds)

    async def _post(self, body: bytes, timeout: float, probing: bool = False) -> str:
        """The raw response body of one POST, bounded by ``timeout`` as a whole.

        Both clients fail the same way: a status error, a refused connection or a timeout
        becomes the same one-line :class:`ProviderError` (or :class:`_FormatRejected`)
        whichever sent the request. The body is read as text and parsed by the caller, so
        that a body that is not a completion is reported, not raised. A ``probing`` request
        (the first in a form not yet known) has its connection timed for the calls waiting
        on it (:meth:`_Forms.connected`); a caller's SDK client is not timed, and they wait
        for its answer or :data:`DEFAULT_FORM_WAIT`.
        """
        client = await self._client()
        where = self.base_url or "OpenAI"
        try:
            async with asyncio.timeout(timeout):
                if isinstance(client, _Direct):
                    timed = self._probe_connected if probing else None
                    status, headers, text = await client.post(body, timed)
                else:
                    return await sdk_post(client, body, timeout)
        except TimeoutError as exc:
            refused = _refused_connection(exc)
            if refused is not None:  # the SDK's aiohttp transport names a refused connect so
                raise ProviderError(
                    f"{self._model}: connection to {where} failed ({refused})"
                ) from exc
            raise ProviderError(
                f"{self._model}: no complete reply within {timeout}s", kind="timeout"
            ) from exc
        except _StatusFailed as exc:
            raise self._status_error(exc) from exc.__cause__
        except Exception as exc:
            if not _connection_failure(exc):
                raise
            name = exc.name if isinstance(exc, _ConnectionFailed) else type(exc).__name__
            raise ProviderError(f"{self._model}: connection to {where} failed ({name})") from exc
        if status >= 400:
            body_seen, message = _error_parts(status, text)
            raise self._status_error(_StatusFailed(status, headers, body_seen, message))
        return text

    def _status_error(self, failed: _StatusFailed) -> Exception:
        """The error to raise for an HTTP error status: a refused format, or a provider fault."""
        reason = self._redact(_error_reason(failed.body, failed.message))
        if failed.status != 429 and _rejects_format(failed.body, failed.message):
            refused = TYPE_REFUSED.search(f"{failed.message} {failed.body}") is not None
            return _FormatRejected(f"{failed.status}: {reason}", type_refused=refused)
        wait = retry_after(failed.headers)
        if failed.status == 429:
            return ProviderError(
                f"{self._model}: rate limited (429)", kind="rate_limited", retry_after=wait
            )
        return ProviderError(
            f"{self._model}: server error {failed.status}: {reason}", retry_after=wait
        )

    def _reply(self, text: str, latency: float) -> Reply:
        """The first choice of a completion envelope, with this client's key redacted."""
        envelope = _envelope(text, self._model)
        choice = envelope["choices"][0]
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise ProviderError(f"{self._model}: malformed reply: a choice without a message")
        content, refusal = message.get("content"), message.get("refusal")
        if not isinstance(content, str | None) or not isinstance(refusal, str | None):
            raise ProviderError(f"{self._model}: malformed reply: content that is not text")
        reason = choice.get("finish_reason")
        reported = envelope.get("model")
        return Reply(
            text=self._redact(content or ""),
            usage=_usage(envelope.get("usage")),
            finish_reason=reason if isinstance(reason, str) else None,
            refusal=self._redact(refusal) if refusal is not None else None,
            latency=latency,
            model=self._redact(reported) if isinstance(reported, str) and reported else self._model,
        )


def request_body(
    model: str,
    messages: list[Message],
    schema: ReplySchema,
    settings: ModelSettings,
    mode: Mode,
) -> bytes:
    """The JSON body of a chat-completions request for ``schema`` in form ``mode``.

    Serialized here, once, and sent as bytes: given a dict, the SDK deep-copies it and walks
    it before encoding it (about a third of a millisecond per call with a JSON schema in the
    request). The schema's part is the same for every call with that schema and form, so it
    is built once (:func:`_format_text`).
    """
    payload = [m.model_dump() for m in messages]
    if mode.startswith("json_object"):
        payload.append({"role": "system", "content": SCHEMA_HINT + _schema_text(schema)})
    head: dict[str, Any] = {
        "model": model,
        "messages": payload,
        "temperature": settings.temperature,
        "max_tokens": call_max_tokens(settings, schema),
    }
    if settings.seed is not None:
        head["seed"] = settings.seed
    text = json.dumps(head)
    return f'{text[:-1]}, "response_format": {_format_text(schema, mode)}}}'.encode()


@functools.lru_cache(maxsize=1024)
def _schema_text(schema: ReplySchema) -> str:
    """The sent schema as JSON text, made once per reply model."""
    return json.dumps(sent_schema(schema))


@functools.lru_cache(maxsize=1024)
def _format_text(schema: ReplySchema, mode: Mode) -> str:
    """``response_format`` as JSON text, made once per reply model and form."""
    return json.dumps(response_format(schema.__name__, sent_schema(schema), mode))


def response_format(name: str, shape: dict[str, Any], mode: Mode) -> dict[str, Any]:
    """``response_format`` for a schema in one of the negotiated forms."""
    if mode == "json_object":
        return {"type": "json_object"}
    if mode == "json_object_schema":
        # llama-cpp-python's server compiles this schema into a grammar.
        return {"type": "json_object", "schema": shape}
    strict = mode == "strict"
    return {
        "type": "json_schema",
        "json_schema": {
            "name": name,
            "schema": _strictify(shape) if strict else shape,
            "strict": strict,
        },
    }


def _envelope(text: str, model: str) -> dict[str, Any]:
    """The parsed completion envelope, or a provider error saying why it is not one."""
    try:
        envelope = json.loads(text)
    except ValueError as exc:
        what = "an HTML page" if text.lstrip()[:1] == "<" else "not JSON"
        raise ProviderError(f"{model}: malformed reply: {what} ({len(text)} bytes)") from exc
    if not isinstance(envelope, dict):
        raise ProviderError(f"{model}: malformed reply: not a completion object")
    choices = envelope.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ProviderError(f"{model}: malformed reply: no choices")
    return envelope


def _usage(usage: Any) -> TokenUsage:
    """Token counts as reported; anything missing or not a count is zero."""
    if not isinstance(usage, dict):
        return TokenUsage()
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else 0
    return TokenUsage(
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
        cached_tokens=_count(cached),
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
