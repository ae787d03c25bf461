"""An independent fault-injecting OpenAI-compatible server for tests, on 127.0.0.1.

Written from the HTTP level (asyncio streams in a thread of its own), not on
``tests/support/openai_server.py``, so that it can send what a bad day on a real server sends:
an HTML page with status 200, a response envelope cut off, a connection reset in the middle
of the body, bytes trickled slowly, replies cut off by the token budget, refusals, apologies,
empty and null content, an error body as content, schema violations (a missing key, a wrong
type, an out-of-range score, a score as a string or a boolean), 429 with and without
Retry-After, and 500.

A request that is not faulted gets a valid reply filled from its JSON schema
(:func:`debate.models.test.fill_schema`). Faults are drawn at ``rate`` from a generator
seeded by ``seed``, the request's messages and how often those messages were seen, so the
same debates get the same faults however concurrent requests interleave. ``pick`` replaces
the draw with a choice of the test's own. Every request and every reply is logged in
:attr:`FaultServer.log`, which is what a test compares a result with.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import random
import socket
import struct
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from debate.models.test import fill_schema

KINDS: tuple[str, ...] = (
    "html_200",
    "truncated_envelope",
    "reset_mid_body",
    "drip",
    "length",
    "refusal",
    "apology",
    "empty",
    "null",
    "error_body",
    "missing_key",
    "wrong_type",
    "out_of_range",
    "string_score",
    "bool_score",
    "http_429_retry_after",
    "http_429",
    "http_500",
)
"""Every fault the server can inject."""
SCORE_KINDS = frozenset({"out_of_range", "string_score", "bool_score"})
"""Faults that need an integer in the reply schema (judges, reviewers), drawn only there."""

APOLOGY = "I'm sorry, but I cannot help with that request."
REFUSAL = "I'm sorry, but I can't assist with that."
ERROR_BODY = json.dumps(
    {"error": {"message": "The server is overloaded", "type": "server_error", "code": 503}}
)
HTML = (
    b"<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head>"
    b"<body><h1>Bad Gateway</h1><p>The upstream server is unavailable.</p></body></html>"
)
SCHEMA_HINT = "Reply with one JSON object matching this JSON schema:\n"
"""How the client sends the schema in plain JSON mode (no ``response_format`` schema)."""
REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests"}

Pick = Callable[[dict[str, Any]], "str | None"]
"""Chooses the fault of one request (None: a valid reply) instead of the seeded draw."""


@dataclass
class Exchange:
    """One request and the reply the server sent to it."""

    index: int
    body: dict[str, Any]
    kind: str | None
    """The injected fault, or None for a valid reply."""
    status: int
    content: str | None = None
    """``message.content`` of the reply sent (None for no envelope or null content)."""
    valid: Any = None
    """The schema-filled value the reply was made from (what a fault then broke)."""
    delivered: int = 0
    """Bytes written before the reply ended (the whole response, unless it was cut)."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The request's chat messages."""
        messages: list[dict[str, Any]] = self.body.get("messages", [])
        return messages

    @property
    def parsed(self) -> Any:
        """The content as JSON, or None when it is not JSON."""
        if self.content is None:
            return None
        try:
            return json.loads(self.content)
        except json.JSONDecodeError:
            return None


@dataclass
class _Response:
    """What to write: status, headers, body, and how to end it."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    ending: str = "whole"
    """``whole``; ``reset`` (half the body, then a TCP reset); ``drip`` (slowly)."""


class FaultServer:
    """Serves ``/v1/chat/completions`` on 127.0.0.1 with faults at ``rate`` of every kind.

    Args:
        rate: Share of requests that get a fault (change it at any time, e.g. to 0).
        seed: Seeds the fault draw and the valid replies.
        kinds: The faults to draw from.
        pick: The test's own choice of fault per request, instead of the draw.
        drip_seconds: How long a dripped reply takes to arrive, in total.
        retry_after: Seconds in the Retry-After header of ``http_429_retry_after``.
    """

    def __init__(
        self,
        *,
        rate: float = 0.0,
        seed: int = 0,
        kinds: tuple[str, ...] = KINDS,
        pick: Pick | None = None,
        drip_seconds: float = 2.0,
        retry_after: int = 1,
    ) -> None:
        unknown = set(kinds) - set(KINDS)
        assert not unknown, f"unknown fault kinds {unknown}"
        self.rate = rate
        self.seed = seed
        self.kinds = kinds
        self.pick = pick
        self.drip_seconds = drip_seconds
        self.retry_after = retry_after
        self.log: list[Exchange] = []
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    # -- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> FaultServer:
        self._thread.start()
        opened = asyncio.run_coroutine_threadsafe(self._open(), self._loop)
        self._server = opened.result(timeout=10)
        return self

    async def _open(self) -> asyncio.Server:
        return await asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=512)

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        current = asyncio.current_task()
        tasks = [t for t in asyncio.all_tasks() if t is not current]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    @property
    def base_url(self) -> str:
        """The ``--base-url`` of this server."""
        assert self._server is not None, "use the server in a with block"
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1"

    def exchanges(self) -> list[Exchange]:
        """A copy of the log, in arrival order."""
        with self._lock:
            return list(self.log)

    # -- HTTP ------------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One connection: requests in turn (keep-alive) until the client or a fault ends it."""
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path = lines[0].split(" ")[:2]
                headers = {
                    name.strip().lower(): value.strip()
                    for name, value in (line.split(":", 1) for line in lines[1:] if ":" in line)
                }
                raw = await reader.readexactly(int(headers.get("content-length", "0")))
                if not await self._answer(method, path, raw, writer):
                    return
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            return
        except asyncio.CancelledError:
            return  # the server is closing: end the connection quietly
        finally:
            if not writer.is_closing():
                writer.close()

    async def _answer(
        self, method: str, path: str, raw: bytes, writer: asyncio.StreamWriter
    ) -> bool:
        """Answer one request; False when the connection is gone afterwards."""
        try:
            body = json.loads(raw)
            schema = _schema_of(body)
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            body, schema = None, None
        if method != "POST" or not path.endswith("/chat/completions"):
            return await _write(writer, _error(404, "no such route"), None)
        if body is None or schema is None:
            return await _write(
                writer, _error(400, "a JSON body with a JSON schema is needed"), None
            )
        exchange, response = self._reply(body, schema)
        return await _write(writer, response, exchange, self.drip_seconds)

    # -- replies ---------------------------------------------------------------------------

    def _reply(self, body: dict[str, Any], schema: dict[str, Any]) -> tuple[Exchange, _Response]:
        """Draw the fault of this request and build the reply, logged before it is sent."""
        digest = hashlib.sha256(json.dumps(body["messages"]).encode()).hexdigest()
        with self._lock:
            self._seen[digest] += 1
            rng = random.Random(f"{self.seed}:{digest}:{self._seen[digest]}")
            kind = self._kind(body, schema, rng)
            valid = fill_schema(schema, rng)
            exchange = Exchange(index=len(self.log), body=body, kind=kind, status=200, valid=valid)
            self.log.append(exchange)
        response = self._faulted(exchange, body.get("model", "test"))
        exchange.status = response.status
        return exchange, response

    def _kind(self, body: dict[str, Any], schema: dict[str, Any], rng: random.Random) -> str | None:
        """The fault of this request: picked, or drawn at ``rate`` from the kinds that apply
        (a score fault applies only to a schema with an integer in it)."""
        draw = rng.random()
        has_int = '"integer"' in json.dumps(schema)
        if self.pick is not None:
            kind = self.pick(body)
            return None if kind in SCORE_KINDS and not has_int else kind
        kinds = [k for k in self.kinds if has_int or k not in SCORE_KINDS]
        return rng.choice(kinds) if draw < self.rate and kinds else None

    def _faulted(self, exchange: Exchange, model: str) -> _Response:
        """The bytes of the reply of ``exchange.kind`` (a fault, or the valid value)."""
        kind, valid = exchange.kind, exchange.valid
        if kind in ("http_429", "http_429_retry_after", "http_500"):
            status = 500 if kind == "http_500" else 429
            response = _error(status, "injected fault")
            if kind == "http_429_retry_after":
                response.headers["Retry-After"] = str(self.retry_after)
            return response
        if kind == "html_200":
            return _Response(200, HTML, content_type="text/html; charset=utf-8")
        text = json.dumps(valid)
        content, finish, refusal = _content(kind, valid, text)
        exchange.content = content
        envelope = _envelope(model, content, finish, refusal, exchange.messages)
        if kind == "truncated_envelope":
            return _Response(200, envelope[: len(envelope) // 2])
        ending = {"reset_mid_body": "reset", "drip": "drip"}.get(kind or "", "whole")
        return _Response(200, envelope, ending=ending)


def _content(kind: str | None, valid: Any, text: str) -> tuple[str | None, str, str | None]:
    """``message.content``, ``finish_reason`` and ``message.refusal`` of a reply with a body."""
    fixed: dict[str, tuple[str | None, str, str | None]] = {
        "length": (text[: len(text) // 2], "length", None),
        "refusal": (None, "stop", REFUSAL),
        "apology": (APOLOGY, "stop", None),
        "empty": ("", "stop", None),
        "null": (None, "stop", None),
        "error_body": (ERROR_BODY, "stop", None),
    }
    if kind in fixed:
        return fixed[kind]
    if kind in ("missing_key", "wrong_type", "out_of_range", "string_score", "bool_score"):
        return json.dumps(_violate(kind, valid)), "stop", None
    return text, "stop", None  # valid, and the transport faults that keep the envelope


def _violate(kind: str, valid: Any) -> Any:
    """A copy of the valid value with one schema violation of ``kind``."""
    broken = copy.deepcopy(valid)
    if kind == "missing_key":
        broken.pop(next(iter(broken)))
        return broken
    want = str if kind == "wrong_type" else int
    holder, key = _first_leaf(broken, want)
    value = holder[key]
    holder[key] = {
        "wrong_type": 12345,
        "out_of_range": 11,
        "string_score": str(value),
        "bool_score": True,
    }[kind]
    return broken


def _first_leaf(node: Any, want: type) -> tuple[Any, Any]:
    """The container and key of the first leaf of type ``want`` (bool is not an int here)."""
    items = node.items() if isinstance(node, dict) else enumerate(node)
    for key, value in items:
        if isinstance(value, dict | list):
            try:
                return _first_leaf(value, want)
            except LookupError:
                continue
        if isinstance(value, want) and not isinstance(value, bool):
            return node, key
    raise LookupError(f"no {want.__name__} in the reply")


def _schema_of(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a request asks for: its response format's, or the plain-JSON hint's."""
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        schema: dict[str, Any] = response_format["json_schema"]["schema"]
        return schema
    for message in body["messages"]:
        content = message.get("content") or ""
        if content.startswith(SCHEMA_HINT):
            hinted: dict[str, Any] = json.loads(content[len(SCHEMA_HINT) :])
            return hinted
    return None


def _envelope(
    model: str,
    content: str | None,
    finish: str,
    refusal: str | None,
    messages: list[dict[str, Any]],
) -> bytes:
    prompt = sum(len(str(m.get("content") or "")) // 4 for m in messages)
    completion = len(content or "") // 4
    return json.dumps(
        {
            "id": "chatcmpl-fault",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": refusal},
                    "finish_reason": finish,
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }
    ).encode()


def _error(status: int, message: str) -> _Response:
    body = {"error": {"message": message, "type": "server_error", "code": status}}
    return _Response(status, json.dumps(body).encode())


async def _write(
    writer: asyncio.StreamWriter,
    response: _Response,
    exchange: Exchange | None,
    drip_seconds: float = 0.0,
) -> bool:
    """Write a response as its ending says; False when the connection was ended."""
    reason = REASONS.get(response.status, "Internal Server Error")
    head = [f"HTTP/1.1 {response.status} {reason}", f"Content-Type: {response.content_type}"]
    head += [f"Content-Length: {len(response.body)}", "Connection: keep-alive"]
    head += [f"{name}: {value}" for name, value in response.headers.items()]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
    body = response.body
    if response.ending == "reset":
        writer.write(body[: len(body) // 2])
        await writer.drain()
        _record(exchange, len(body) // 2)
        _reset(writer)
        return False
    if response.ending == "drip":
        chunks = 12
        step = -(-len(body) // chunks)
        for start in range(0, len(body), step):
            writer.write(body[start : start + step])
            await writer.drain()
            _record(exchange, start + len(body[start : start + step]))
            await asyncio.sleep(drip_seconds / chunks)
        return True
    writer.write(body)
    await writer.drain()
    _record(exchange, len(body))
    return True


def _record(exchange: Exchange | None, delivered: int) -> None:
    if exchange is not None:
        exchange.delivered = delivered


def _reset(writer: asyncio.StreamWriter) -> None:
    """End the connection with a TCP reset (SO_LINGER 0), not an orderly close."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
