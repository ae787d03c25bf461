"""OpenAI-compatible backend: OpenAI itself, vLLM, Ollama, llama.cpp's server, any ``base_url``.

This is the only module that imports :mod:`openai`, and only for a caller's own client: a
model that builds its own client does not send through it (nor import it, 0.3 s a run): each
request is one POST on a shared ``aiohttp`` session (:class:`_Direct`), since the SDK's per-
request machinery cost more CPU than the rest of the request at a few hundred calls in
flight. A caller's own ``AsyncOpenAI`` client (``client=``) is still used as given; both
fail with the same errors.

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
import email.utils
import functools
import json
import logging
import os
import re
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from debate._version import __version__
from debate.exceptions import ConfigurationError, ProviderError
from debate.models._base import Message, ModelSettings, Reply, ReplySchema, TokenUsage
from debate.models._schema import call_max_tokens, sent_schema

if TYPE_CHECKING:  # imported where a caller's SDK client is used: ~0.3 s a run without one
    from openai import AsyncOpenAI

logger = logging.getLogger(__name__)

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 8
"""Shorter keys are not redacted: replacing a 3-letter string everywhere would mangle text."""

Mode = Literal["strict", "json_schema", "json_object_schema", "json_object"]
MODES: tuple[Mode, ...] = ("strict", "json_schema", "json_object_schema", "json_object")
"""Structured-output forms, most to least constrained; a rejected form steps one down."""

FORMAT_ERROR = re.compile(r"response_format|json_schema|json_object|schema|'text'", re.IGNORECASE)
"""What an error body says when the server refuses the requested format itself."""
TYPE_REFUSED = re.compile(
    r"json_object|json_schema\W+(?:is\s+)?(?:not|un)\s*(?:supported|allowed|permitted)",
    re.IGNORECASE,
)
"""What a refusal of ``json_schema`` says when the server does not take that type at all: it
names the types it takes (llama-cpp-python: "Input should be 'text' or 'json_object'"), or
says ``json_schema`` is not supported. The non-strict ``json_schema`` is then not tried."""
DEFAULT_FORM_WAIT = 1.0
"""Seconds a call waits for the first request of an endpoint and model whose form is not yet
known, before sending its own. A refused form is answered before any generation (within
milliseconds on a local server), so the waiting calls learn it instead of each being
refused; a request still out after this long was taken, and the wait costs no more."""
SCHEMA_HINT = "Reply with one JSON object matching this JSON schema:\n"
JSON_HEADERS = {"Content-Type": "application/json"}
"""A body sent as bytes carries its type itself (the SDK adds it only to a dict body)."""
OPENAI_BASE_URL = "https://api.openai.com/v1"
"""Where the SDK sends a client without a ``base_url`` and without ``OPENAI_BASE_URL``."""
POOL_LIMIT = 1000
"""Connections per client, the SDK's own default: a run's concurrency never waits on it."""


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


def _refused_connection(exc: BaseException) -> str | None:
    """The name of a connection failure behind a reported timeout, if there is one.

    The SDK's aiohttp transport maps every ``aiohttp.ClientConnectionError`` to
    ``httpx.ConnectTimeout``, so a server that refuses the connection (down, wrong port)
    arrives as a timeout after no wait at all. The cause chain still holds the OS error.
    """
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and not isinstance(seen, TimeoutError):
            return type(seen).__name__
        seen = seen.__cause__ or seen.__context__
    return None


def endpoint_url(base_url: str | None) -> str:
    """The chat-completions URL, resolving a missing ``base_url`` as the SDK does."""
    base = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
    return base.rstrip("/") + "/chat/completions"


def request_headers(url: str, key: str | None) -> dict[str, str]:
    """The headers of every request to ``url``: JSON both ways, who is asking, and the key.

    No Authorization header at all without a key (a keyless server must not see even a
    placeholder). ``OPENAI_ORG_ID``/``OPENAI_PROJECT_ID`` are read as the SDK reads them,
    but sent only to OpenAI's own hosts: the SDK sends them to any ``base_url``, and an
    organisation id is OpenAI's business only, like the key in ``OPENAI_API_KEY``.
    """
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "User-Agent": f"debate/{__version__}",
    }
    if key:
        headers["Authorization"] = f"Bearer {key}"
    host = urlsplit(url).hostname or ""
    if host == "openai.com" or host.endswith(".openai.com"):
        for name, variable in (
            ("OpenAI-Organization", "OPENAI_ORG_ID"),
            ("OpenAI-Project", "OPENAI_PROJECT_ID"),
        ):
            value = os.environ.get(variable)
            if value:
                headers[name] = value
    return headers


class _Direct:
    """The chat-completions POST on one shared ``aiohttp`` session, without the SDK.

    Measured against a 50 ms server at concurrency 64: the SDK's ``post`` costs 0.55 ms
    of CPU per request on its aiohttp transport (an options model built and deep-copied,
    six header objects, its own URL parser, the response wrapped twice), a bare aiohttp
    POST 0.15 ms; at concurrency 256 that difference was a whole core. The session keeps
    no cookies (a completion API sets none worth keeping, and the jar is per-request work)
    and verifies TLS with aiohttp's default context. A proxy from the environment is used
    as the SDK uses it, but looked up once (:func:`_env_proxy`): aiohttp's ``trust_env``
    looks it up, and ``~/.netrc``, in a worker thread on every request, which cost as much
    CPU again as the rest of the request.
    """

    def __init__(self, url: str, headers: dict[str, str], proxy: _Proxy) -> None:
        import aiohttp

        self.url = url
        self.headers = headers
        self.proxy, self.proxy_auth = proxy
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=POOL_LIMIT),
            cookie_jar=aiohttp.DummyCookieJar(),
            timeout=aiohttp.ClientTimeout(total=None),  # the caller bounds the whole call
        )

    async def post(self, body: bytes) -> tuple[int, Mapping[str, str], str]:
        """Status, headers and body text of one POST; a connection failure is an OSError."""
        async with self.session.post(
            self.url,
            data=body,
            headers=self.headers,
            proxy=self.proxy,
            proxy_auth=self.proxy_auth,
        ) as response:
            raw = await response.read()
            return response.status, response.headers, raw.decode("utf-8", "replace")

    async def close(self) -> None:
        await self.session.close()


_Proxy = tuple[Any, Any]
"""A proxy URL and its credentials (``yarl.URL``, ``aiohttp.BasicAuth``), or two Nones."""


def _env_proxy(url: str) -> _Proxy:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``NO_PROXY``...).

    aiohttp's own lookup, as its ``trust_env`` makes it, done once: it reads ``~/.netrc``
    for the proxy's credentials, so it runs in a worker thread, as does the import of
    aiohttp, which builds its TLS contexts at import (the CA certificates, ~0.15 s of CPU).
    """
    from aiohttp.helpers import get_env_proxy_for_url
    from yarl import URL

    try:
        return get_env_proxy_for_url(URL(url))
    except LookupError:
        return None, None


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


_FormKey = tuple[str, str]
"""A chat-completions URL and a model name."""


class _Forms:
    """The structured-output form each endpoint and model takes, learned once per process.

    Shared by every :class:`OpenAIModel` (a run's debaters and judges are separate objects,
    and a batch or the service builds many). A form only ever moves down. Until a request in
    the current form has been answered, the calls of one event loop send one at a time: the
    first probes, the others wait for its answer (at most ``wait`` seconds) and then send in
    the form it left, so concurrent first calls are not all refused. Calls on another loop
    (another thread's run) do not wait across loops; they probe on their own, which costs a
    request, never a wrong form.
    """

    def __init__(self, wait: float = DEFAULT_FORM_WAIT) -> None:
        self.wait = wait
        self._lock = threading.Lock()
        self._modes: dict[_FormKey, Mode] = {}
        self._known: set[_FormKey] = set()
        """Keys whose current form has been answered (no waiting any more)."""
        self._probes: dict[_FormKey, asyncio.Future[None]] = {}
        """The request in flight that will tell the form of a key not yet known."""

    def mode(self, key: _FormKey) -> Mode:
        """The form requests to ``key`` are sent in now."""
        with self._lock:
            return self._modes.get(key, MODES[0])

    async def claim(self, key: _FormKey) -> tuple[Mode, asyncio.Future[None] | None]:
        """The form to send in, and the probe to :meth:`release` if this call is the probe.

        A call that finds another call of its loop probing waits for it (up to ``wait``).
        """
        loop = asyncio.get_running_loop()
        with self._lock:
            mode = self._modes.get(key, MODES[0])
            if key in self._known:
                return mode, None
            probe = self._probes.get(key)
            if probe is None or probe.done():
                mine: asyncio.Future[None] = loop.create_future()
                self._probes[key] = mine
                return mode, mine
            if probe.get_loop() is not loop:
                return mode, None
        try:
            await asyncio.wait_for(asyncio.shield(probe), self.wait)
        except TimeoutError:
            pass
        return self.mode(key), None

    @staticmethod
    def release(probe: asyncio.Future[None] | None) -> None:
        """Wake the calls waiting on ``probe`` (its request was answered, or failed)."""
        if probe is not None and not probe.done():
            probe.set_result(None)

    def answered(self, key: _FormKey, mode: Mode) -> None:
        """Note that a request in ``mode`` got a reply: the form of ``key`` is known."""
        with self._lock:
            if self._modes.get(key, MODES[0]) == mode:
                self._known.add(key)

    def step_down(self, key: _FormKey, to: Mode) -> Mode:
        """Move ``key`` down to ``to`` (never up: concurrent refusals may arrive late)."""
        with self._lock:
            current = MODES.index(self._modes.get(key, MODES[0]))
            if MODES.index(to) > current:
                self._modes[key] = to
                self._known.discard(key)
            return self._modes.get(key, MODES[0])

    def clear(self) -> None:
        """Forget every learned form (tests; a process that knows a server changed)."""
        with self._lock:
            self._modes.clear()
            self._known.clear()
            self._probes.clear()


FORMS = _Forms()
"""The process's structured-output forms, by endpoint and model."""


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
                reply = await self._request(messages, schema, settings, mode)
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
        self, messages: list[Message], schema: ReplySchema, settings: ModelSettings, mode: Mode
    ) -> Reply:
        body = request_body(self._model, messages, schema, settings, mode)
        start = time.perf_counter()
        text = await self._post(body, settings.timeout)
        return self._reply(text, time.perf_counter() - start)

    async def _post(self, body: bytes, timeout: float) -> str:
        """The raw response body of one POST, bounded by ``timeout`` as a whole.

        Both clients fail the same way: a status error, a refused connection or a timeout
        becomes the same one-line :class:`ProviderError` (or :class:`_FormatRejected`)
        whichever sent the request. The body is read as text and parsed by the caller, so
        that a body that is not a completion is reported, not raised.
        """
        client = await self._client()
        where = self.base_url or "OpenAI"
        try:
            async with asyncio.timeout(timeout):
                if isinstance(client, _Direct):
                    status, headers, text = await client.post(body)
                else:
                    return await self._sdk_post(client, body, timeout)
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

    @staticmethod
    async def _sdk_post(client: AsyncOpenAI, body: bytes, timeout: float) -> str:
        """The plain POST of the chat-completions route through a caller's SDK client.

        The same request and error types as ``chat.completions.create``, without its
        per-call walk over the typed parameters. Its errors are turned into the direct
        path's (:class:`_StatusFailed`, ``TimeoutError``) so that one mapping serves both.
        """
        import openai

        options: openai.RequestOptions = {"timeout": timeout, "headers": JSON_HEADERS}
        try:
            text: str = await client.post(
                "/chat/completions", content=body, cast_to=str, options=options
            )
        except openai.APITimeoutError as exc:
            raise TimeoutError from exc
        except openai.APIStatusError as exc:
            failed = _StatusFailed(exc.status_code, exc.response.headers, exc.body, exc.message)
            raise failed from exc
        except openai.APIConnectionError as exc:
            cause = type(exc.__cause__).__name__ if exc.__cause__ else "connection error"
            raise _ConnectionFailed(cause) from exc
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


class _StatusFailed(Exception):
    """An HTTP error status as either client saw it: what the error mapping needs of it.

    ``body`` and ``message`` are what the SDK makes of an error response (the ``error``
    object of a JSON body, else its text; ``"Error code: N - message"``), so that a refused
    format is recognised from the same text whichever client sent the request.
    """

    def __init__(self, status: int, headers: Mapping[str, str], body: object, message: str):
        super().__init__(message)
        self.status = status
        self.headers = headers
        self.body = body
        self.message = message


def _error_parts(status: int, text: str) -> tuple[object, str]:
    """``body`` and ``message`` of an error response, as the SDK builds them."""
    message = f"Error code: {status}"
    body: object = text.strip()
    try:
        body = json.loads(str(body))
    except ValueError:
        return body, message
    if isinstance(body, dict):
        body = body.get("error", body)
    inner = body.get("message") if isinstance(body, dict) else None
    if isinstance(inner, str) and inner:
        message += f" - {inner}"
    return body, message


class _ConnectionFailed(Exception):
    """A failed connection as the SDK reports it, named by its cause (as aiohttp's are)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _connection_failure(exc: BaseException) -> bool:
    """True for a failed connection on either client (refused, reset, cut mid-body)."""
    if isinstance(exc, _ConnectionFailed | OSError):
        return True
    import aiohttp  # loaded by then: only our own session raises its errors

    return isinstance(exc, aiohttp.ClientError)


class _FormatRejected(Exception):
    """The server refused the form of ``response_format`` (not the request as a whole)."""

    def __init__(self, reason: str, *, type_refused: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.type_refused = type_refused
        """The error says the server does not take a ``json_schema`` type at all."""


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


def _error_reason(body: object, message: str) -> str:
    """The first line of the server's error message, short enough for one log line."""
    shown: Any = body
    if isinstance(body, dict):
        inner = body.get("error", body)
        shown = inner.get("message", inner) if isinstance(inner, dict) else inner
    text = str(shown if shown is not None else message).strip()
    line = text.splitlines()[0] if text else "no message"
    return line if len(line) <= 200 else line[:199] + "…"


def _rejects_format(body: object, message: str) -> bool:
    """True when the error is about ``response_format``, not about the request's content.

    Judged from the error's text, since servers disagree on the status (400, 422, or 500 for
    llama-cpp-python's "Input should be 'text' or 'json_object'"); a prompt over the context
    limit or an overloaded server says nothing about the format and changes no form.
    """
    return FORMAT_ERROR.search(f"{message} {body}") is not None


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
