"""The OpenAI backend's HTTP: its own ``aiohttp`` session, the headers, and how a POST fails.

Kept apart from :mod:`debate.models.openai` (the model, and the request and reply it
builds and parses): the URL and headers of an endpoint, the session without the SDK
(:class:`_Direct`), the same POST through a caller's own SDK client (:func:`sdk_post`),
and the one form both clients' failures take (:class:`_StatusFailed`,
:class:`_ConnectionFailed`, ``TimeoutError``) so that one mapping serves both.
"""

from __future__ import annotations

import email.utils
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from debate._version import __version__

if TYPE_CHECKING:  # imported where a caller's SDK client is used: ~0.3 s a run without one
    from openai import AsyncOpenAI

JSON_HEADERS = {"Content-Type": "application/json"}
"""A body sent as bytes carries its type itself (the SDK adds it only to a dict body)."""
OPENAI_BASE_URL = "https://api.openai.com/v1"
"""Where the SDK sends a client without a ``base_url`` and without ``OPENAI_BASE_URL``."""
POOL_LIMIT = 1000
"""Connections per client, the SDK's own default: a run's concurrency never waits on it."""


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
        self.url = url
        self.headers = headers
        self.proxy, self.proxy_auth = proxy
        self.session = _session()

    async def post(
        self, body: bytes, connected: Callable[[float], None] | None = None
    ) -> tuple[int, Mapping[str, str], str]:
        """Status, headers and body text of one POST; a connection failure is an OSError.

        With ``connected``, the POST goes out on a connection of its own, and ``connected``
        is told the seconds it took to make (name lookup, TCP, TLS, a proxy's tunnel). Only
        a probe of the structured-output form asks: a trace on the shared session would cost
        every request its trace objects.
        """
        if connected is None:
            return await self._send(self.session, body)
        async with _session([_connect_timer(connected)], limit=1) as own:
            return await self._send(own, body)

    async def _send(self, session: Any, body: bytes) -> tuple[int, Mapping[str, str], str]:
        async with session.post(
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


def _session(traces: Sequence[Any] = (), limit: int = POOL_LIMIT) -> Any:
    """An ``aiohttp`` session as :class:`_Direct` sends on.

    No cookies, and no timeout of its own: the caller bounds the whole call.
    """
    import aiohttp

    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=limit),
        cookie_jar=aiohttp.DummyCookieJar(),
        timeout=aiohttp.ClientTimeout(total=None),
        trace_configs=list(traces) or None,
    )


def _connect_timer(connected: Callable[[float], None]) -> Any:
    """An ``aiohttp`` trace that tells ``connected`` how long each new connection took."""
    import aiohttp

    async def started(session: Any, context: Any, params: Any) -> None:
        context.started = time.perf_counter()

    async def made(session: Any, context: Any, params: Any) -> None:
        connected(time.perf_counter() - context.started)

    trace = aiohttp.TraceConfig()
    trace.on_connection_create_start.append(started)
    trace.on_connection_create_end.append(made)
    return trace


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


def _error_reason(body: object, message: str) -> str:
    """The first line of the server's error message, short enough for one log line."""
    shown: Any = body
    if isinstance(body, dict):
        inner = body.get("error", body)
        shown = inner.get("message", inner) if isinstance(inner, dict) else inner
    text = str(shown if shown is not None else message).strip()
    line = text.splitlines()[0] if text else "no message"
    return line if len(line) <= 200 else line[:199] + "…"


async def sdk_post(client: AsyncOpenAI, body: bytes, timeout: float) -> str:
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
