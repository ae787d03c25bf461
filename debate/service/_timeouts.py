"""Read timeouts of ``debate serve``'s connections: a request must arrive in time.

uvicorn closes a connection left idle between requests (its keep-alive timeout), but any
byte cancels that timer, and it has no limit of its own on how long a request's headers or
body may take: a client sending one byte a second held a connection (and a request's
memory) for as long as it liked, and a few hundred such clients would hold the server.

:class:`TimedHttpProtocol` is uvicorn's ``httptools`` protocol with two deadlines: the
headers of a request must be whole within ``header_timeout`` seconds of the connection
being made or of the request's first byte, and its body within ``body_timeout`` seconds of
its headers. Past either, the server answers ``408`` (in the service's error shape, when
no response has started) and closes the connection. An event stream is not affected: its
request has no body and is whole at once; only what the client sends is timed.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from debate.service._models import JobError, ServiceLimits


class TimedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, with a deadline on each request's headers and body."""

    header_timeout: float = ServiceLimits().header_timeout_s
    """Seconds from the connection (or a request's first byte) to its whole headers."""
    body_timeout: float = ServiceLimits().body_timeout_s
    """Seconds from a request's headers to its whole body."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._waiting_for = "headers"

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start the connection's first request's header deadline."""
        super().connection_made(transport)
        self._arm("headers", self.header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        """No deadline outlives its connection."""
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        """A request's first byte: its headers are due (a kept-alive connection's next)."""
        super().on_message_begin()
        if self._deadline is None:
            self._arm("headers", self.header_timeout)

    def on_headers_complete(self) -> None:
        """The headers are in: the body is due now."""
        self._arm("body", self.body_timeout)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        """The whole request is in: nothing more is due from the client."""
        self._disarm()
        super().on_message_complete()

    def _arm(self, part: str, seconds: float) -> None:
        self._disarm()
        self._waiting_for = part
        self._deadline = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        """Too slow: answer 408 if no response has started, and close the connection."""
        self._deadline = None
        if self.transport.is_closing():
            return
        cycle = self.cycle
        answering = cycle is not None and cycle.response_started and not cycle.response_complete
        if not answering:
            self.transport.write(_timeout_response(self._waiting_for, self._limit()))
        self.transport.close()

    def _limit(self) -> float:
        return self.header_timeout if self._waiting_for == "headers" else self.body_timeout


def _timeout_response(part: str, seconds: float) -> bytes:
    """A whole ``408`` response, its body the service's error shape."""
    error = JobError(
        kind="timeout",
        message=f"{part}: not received within {seconds:g} s; send the request at once",
        field=part,
    )
    body = json.dumps({"error": error.model_dump(exclude_none=True)}).encode("utf-8")
    head = (
        "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


def http_protocol(limits: ServiceLimits) -> type[TimedHttpProtocol]:
    """The protocol class for uvicorn (``http=``) with ``limits``' read timeouts."""
    return type(
        "TimedHttpProtocol",
        (TimedHttpProtocol,),
        {"header_timeout": limits.header_timeout_s, "body_timeout": limits.body_timeout_s},
    )
