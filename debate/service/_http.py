"""What every HTTP request of the service goes through: its id, its log line, the body limit.

Written as plain ASGI middleware rather than Starlette's ``BaseHTTPMiddleware``: that one
buffers streaming responses through a task of its own, which would hold the event
streams (``GET /v1/jobs/{id}/events``) and lose the request's context variables.

Each request gets an id (the client's ``X-Request-ID`` when it is a sane token, else a new
one), echoed in the response; :class:`RequestContextFilter` stamps it on every log record
made while the request is handled, and one access line per request gives the method, the
path, the status, the milliseconds, the job and the caller's digest prefix. A line never
holds a body, a query string, a header's value or a key.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable, MutableMapping
from contextvars import ContextVar
from typing import IO, Any

from starlette.responses import JSONResponse

from debate.service._auth import Authenticator, AuthError
from debate.service._models import JobError

logger = logging.getLogger("debate.service.access")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

REQUEST_ID_HEADER = "X-Request-ID"
_SANE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
"""A client's request id is taken only if it cannot forge or break a log line."""

CONTEXT: ContextVar[dict[str, str] | None] = ContextVar("debate_service_request", default=None)
"""The request being handled: ``request_id``, and ``job`` and ``token`` once known."""

CLIENT_GONE = 499
"""The access line's status of a request whose client went before its body was whole
(nginx's code for it): no response was sent."""

_GONE = JSONResponse(None)
""":meth:`RequestMiddleware._read_body`'s marker of a client gone mid-body (never sent)."""

FIELDS = ("request_id", "method", "path", "status", "ms", "job", "token")
"""The fields of a log line (JSON) besides time, level, logger and message."""


def note(**values: str) -> None:
    """Add to the current request's log fields (its job id, the caller's digest prefix)."""
    context = CONTEXT.get()
    if context is not None:
        context.update(values)


def error_response(
    status: int, error: JobError, headers: dict[str, str] | None = None
) -> JSONResponse:
    """The service's one error shape: ``{"error": JobError}``."""
    return JSONResponse(
        {"error": error.model_dump(exclude_none=True)}, status_code=status, headers=headers
    )


class RequestContextFilter(logging.Filter):
    """Puts the current request's id (``-`` outside a request) on every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Stamp the record; never drops one."""
        context = CONTEXT.get() or {}
        for name in ("request_id", "job", "token"):
            if not hasattr(record, name):
                setattr(record, name, context.get(name, "-"))
        return True


class JsonLineFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and the request's fields."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as a JSON line."""
        line: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in FIELDS:
            value = getattr(record, name, None)
            if value is not None and value != "-":
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line)


TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"


def log_handler(log_format: str, stream: IO[str]) -> logging.Handler:
    """A handler for ``debate serve``'s logs: ``json`` lines or ``text``, with request ids."""
    handler = logging.StreamHandler(stream)
    handler.addFilter(RequestContextFilter())
    if log_format == "json":
        handler.setFormatter(JsonLineFormatter())
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    return handler


BODY_METHODS = ("POST", "PUT", "PATCH")
"""The methods whose body this middleware reads (and so checks the caller of first)."""


class RequestMiddleware:
    """Request ids, the access log line, the token and the body size limit, around the app.

    A request with a body is refused with 401 when ``auth`` does not accept its token,
    before a byte of the body is read: a stranger cannot make the server read (and hold)
    ``max_body`` bytes. A body is refused with 413 when its ``Content-Length`` is over
    ``max_body`` and, for a body sent without one (chunked), as soon as the bytes read pass
    it: the body is read here, up to the limit, and handed to the app only when whole. A
    client gone before its body was whole (or cut off by ``debate serve``'s body timeout)
    gets nothing: the app never sees half a body.
    """

    def __init__(self, app: ASGIApp, *, max_body: int, auth: Authenticator | None = None) -> None:
        self.app = app
        self.max_body = max_body
        self.auth = auth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one HTTP request (other scopes pass through)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        given = headers.get(REQUEST_ID_HEADER.lower(), "")
        request_id = given if _SANE_ID.fullmatch(given) else secrets.token_hex(8)
        context = {"request_id": request_id, "method": scope["method"], "path": scope["path"]}
        token = CONTEXT.set(context)
        start, status = time.perf_counter(), [500]

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                message.setdefault("headers", [])
                message["headers"] = [
                    *message["headers"],
                    (REQUEST_ID_HEADER.lower().encode(), request_id.encode()),
                ]
            await send(message)

        try:
            refused = self._unauthorised(scope, headers)
            body: Receive | None = None
            if refused is None:
                refused, body = await self._read_body(scope, receive, headers)
            if refused is _GONE:
                status[0] = CLIENT_GONE
            elif refused is not None:
                await refused(scope, receive, send_with_id)
            else:
                await self.app(scope, body or receive, send_with_id)
        finally:
            self._access_line(context, status[0], time.perf_counter() - start)
            CONTEXT.reset(token)

    def _unauthorised(self, scope: Scope, headers: dict[str, str]) -> JSONResponse | None:
        """A 401 for a request with a body whose token is not accepted (None: go on).

        The routes check the caller again (and whose job it is); this check is only so that
        no body is read for a caller who could not submit it.
        """
        if self.auth is None or scope["method"] not in BODY_METHODS:
            return None
        try:
            self.auth.caller(headers.get("authorization"))
        except AuthError as exc:
            headers_out = {"WWW-Authenticate": "Bearer", "Connection": "close"}
            return error_response(exc.status, exc.error, headers_out)
        return None

    async def _read_body(
        self, scope: Scope, receive: Receive, headers: dict[str, str]
    ) -> tuple[JSONResponse | None, Receive | None]:
        """The body, read whole, or why not.

        Returns:
            (a 413 response, None); (:data:`_GONE`, None) if the client went before the
            body was whole; or (None, a receive that replays the whole body).
        """
        if scope["method"] not in BODY_METHODS:
            return None, None
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_body:
            return self._too_large(), None
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return _GONE, None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                return self._too_large(), None
            chunks.append(chunk)
            more = message.get("more_body", False)
        body, sent = b"".join(chunks), [False]

        async def replay() -> Message:
            if sent[0]:
                return await receive()  # after the body: wait for the disconnect
            sent[0] = True
            return {"type": "http.request", "body": body, "more_body": False}

        return None, replay

    def _too_large(self) -> JSONResponse:
        return error_response(
            413,
            JobError(
                kind="too_large",
                message=f"body: over this server's limit of {self.max_body} bytes; "
                "send a smaller request (split a batch into several jobs)",
                field="body",
            ),
            {"Connection": "close"},
        )

    @staticmethod
    def _access_line(context: dict[str, str], status: int, seconds: float) -> None:
        ms = round(seconds * 1000, 1)
        extra = {"status": status, "ms": ms, "method": context["method"], "path": context["path"]}
        logger.info(
            "%s %s %d %.1fms job=%s token=%s",
            context["method"],
            context["path"],
            status,
            ms,
            context.get("job", "-"),
            context.get("token", "-"),
            extra=extra,
        )
