"""An OpenAI-compatible chat-completions server for tests, on 127.0.0.1.

It answers every request with a reply that fits the request's JSON schema (placeholder
text, seeded scores) unless a ``responder`` says otherwise, after a fixed latency, and
records each request with its start and end times so tests can see what was in flight.

A responder can also script what a broken server sends: a raw 200 body (an HTML page), a
completion envelope cut short, a connection reset in the middle of the body, a body
trickled byte by byte, an empty ``choices`` list.
"""

from __future__ import annotations

import hashlib
import json
import random
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from debate.models.test import fill_schema
from debate.runtime._ask import REASK

Responder = Callable[[dict[str, Any]], "Reply"]


@dataclass
class Reply:
    content: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None
    """Raw body for error statuses."""
    hang: float = 0.0
    finish_reason: str = "stop"
    """``length`` scripts a reply cut off by ``max_tokens``."""
    refusal: str | None = None
    """Scripts a refusal (OpenAI's ``message.refusal``)."""
    raw: str | None = None
    """Raw body for a 200 (an HTML page, a JSON error object), sent as ``content_type``."""
    content_type: str = "application/json"
    cut: int | None = None
    """Send only the first ``cut`` bytes of the body, as a complete (short) response."""
    reset_after: int | None = None
    """Announce the whole body, send ``reset_after`` bytes of it, then reset the connection."""
    drip: float = 0.0
    """Trickle the body over this many seconds, a few bytes at a time."""
    choices: list[Any] | None = None
    """Replaces the envelope's ``choices`` (``[]`` scripts an empty list)."""


@dataclass
class Record:
    start: float
    end: float
    body: dict[str, Any]
    status: int
    connected: float = 0.0
    """When the request's connection was accepted: tells a killed client's request that the
    server read only after the kill (still in a socket buffer) from a restarted client's."""
    peer: int = 0
    """The client's port: tells which process sent it (tests/service/test_service_replicas.py)."""
    replied: float = 0.0
    """When the reply's first byte was about to leave: the client cannot have read the reply
    before it, so a request the reply caused always starts after it (``end`` is taken after
    the write, and the client may already have sent its next request by then)."""

    @property
    def system(self) -> str:
        return str(self.body["messages"][0]["content"])

    @property
    def user(self) -> str:
        return str(self.body["messages"][-1]["content"])

    @property
    def response_format(self) -> dict[str, Any]:
        return dict(self.body["response_format"])

    @property
    def mode(self) -> str:
        """``strict``, ``json_schema``, ``json_object_schema`` or ``json_object``."""
        fmt = self.response_format
        if fmt["type"] == "json_schema":
            return "strict" if fmt["json_schema"].get("strict") else "json_schema"
        return "json_object_schema" if "schema" in fmt else str(fmt["type"])

    @property
    def max_tokens(self) -> int:
        return int(self.body["max_tokens"])


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle's algorithm the body then waits for
    # the client's delayed ACK of the headers (40 ms on Linux) on every reused connection:
    # 0.12 s of a debate's 0.8 s critical path that no real server (uvicorn, vLLM) adds.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def setup(self) -> None:
        super().setup()
        self.connected = time.monotonic()

    def do_POST(self) -> None:  # noqa: N802
        fake = self.server.fake
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length))
        fake.authorizations.append(self.headers.get("Authorization", ""))
        start = time.monotonic()
        with fake._lock:
            fake.in_flight += 1
            fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
        replied = 0.0
        try:
            reply = fake._reply(body)
            if fake.latency:
                time.sleep(fake.latency)
            if reply.hang:
                time.sleep(reply.hang)
            data = fake._payload(reply, body).encode()
            # The request leaves flight before its first byte does: once the client can read
            # the reply it may send its next request, and that one must not count as
            # overlapping this one (a stage would look concurrent with the next).
            replied = self._leave_flight()
            self._send(reply, data)
        finally:
            if not replied:
                replied = self._leave_flight()
            with fake._lock:
                record = Record(
                    start, time.monotonic(), body, reply.status, self.connected,
                    self.client_address[1], replied,
                )  # fmt: skip
                fake.records.append(record)

    def _leave_flight(self) -> float:
        fake = self.server.fake
        with fake._lock:
            fake.in_flight -= 1
        return time.monotonic()

    def _send(self, reply: Reply, data: bytes) -> None:
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(data)))
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.end_headers()
            self._write(reply, data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _write(self, reply: Reply, data: bytes) -> None:
        if reply.reset_after is not None:
            self.wfile.write(data[: reply.reset_after])
            self.wfile.flush()
            # SO_LINGER 0: close() sends a TCP reset instead of a clean end.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return
        if reply.drip:
            step = max(1, len(data) // 40)
            for start in range(0, len(data), step):
                self.wfile.write(data[start : start + step])
                self.wfile.flush()
                time.sleep(reply.drip / 40)
            return
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    request_queue_size = 512  # the default 5 drops connections under concurrency
    daemon_threads = True

    def __init__(self, fake: FakeOpenAIServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A scripted reset, or a client that gave up (a timeout): not a test failure.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class FakeOpenAIServer:
    def __init__(
        self, *, latency: float = 0.0, seed: int = 0, responder: Responder | None = None
    ) -> None:
        self.latency = latency
        self.responder = responder
        self.records: list[Record] = []
        self.authorizations: list[str] = []
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self._server = _Server(self)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _payload(self, reply: Reply, body: dict[str, Any]) -> str:
        """The response body: an error, a raw body, or a completion envelope (maybe cut)."""
        if reply.status != 200:
            return reply.body or json.dumps(
                {"error": {"message": "injected", "type": "server_error"}}
            )
        if reply.raw is not None:
            return reply.raw
        choices = reply.choices
        if choices is None:
            message = {"role": "assistant", "content": reply.content, "refusal": reply.refusal}
            choices = [{"index": 0, "message": message, "finish_reason": reply.finish_reason}]
        envelope = json.dumps(
            {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "test"),
                "choices": choices,
                "usage": {
                    "prompt_tokens": sum(len(m["content"]) // 4 for m in body["messages"]),
                    "completion_tokens": len(reply.content or "") // 4,
                    "total_tokens": 0,
                },
            }
        )
        return envelope if reply.cut is None else envelope[: reply.cut]

    def _reply(self, body: dict[str, Any]) -> Reply:
        if self.responder is not None:
            return self.responder(body)
        return Reply(content=json.dumps(self.valid(body)))

    def valid(self, body: dict[str, Any]) -> Any:
        schema = request_schema(body)
        with self._lock:
            return fill_schema(schema, self._rng)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def request_schema(body: dict[str, Any]) -> dict[str, Any]:
    """The JSON schema a request asks for, in whichever form the client sent it."""
    fmt = body["response_format"]
    if fmt["type"] == "json_schema":
        return dict(fmt["json_schema"]["schema"])
    if "schema" in fmt:
        return dict(fmt["schema"])
    hint = body["messages"][-1]["content"]
    return dict(json.loads(hint.split("\n", 1)[1]))


LLAMA_JSON_SCHEMA_500 = json.dumps(
    {
        "error": {
            "message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', "
            "'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", "
            "'input': 'json_schema', 'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n"
            '  File "llama_cpp/server/app.py", line 376, in create_chat_completion\n'
            "    POST /v1/chat/completions",
            "type": "internal_server_error",
            "param": None,
            "code": None,
        }
    }
)
"""What llama-cpp-python's server (0.3.x) answers to ``"type": "json_schema"``: HTTP 500."""


def seeded_reply(body: dict[str, Any]) -> Reply:
    """A valid reply drawn from a generator seeded by the request's messages: the same request
    gets the same reply, whatever else the server is doing."""
    digest = hashlib.sha256(json.dumps(body["messages"]).encode()).digest()
    return Reply(content=json.dumps(fill_schema(request_schema(body), random.Random(digest))))


def is_reask(body: dict[str, Any]) -> bool:
    """True when the request is a re-ask (the model shown its invalid reply and the error)."""
    return str(body["messages"][-1]["content"]).startswith(REASK.split("{error}")[0])


def empty_first_try(body: dict[str, Any]) -> Reply:
    """Issue 28's reproduction: every call's first try gets an empty reply, so every call
    needs a re-ask, which gets a valid, seeded reply."""
    return seeded_reply(body) if is_reask(body) else Reply(content="")


def refuse_json_schema(body: dict[str, Any]) -> Reply:
    """llama-cpp-python's server: ``json_schema`` refused with a 500, JSON mode answered."""
    if body["response_format"]["type"] == "json_schema":
        return Reply(status=500, body=LLAMA_JSON_SCHEMA_500)
    return seeded_reply(body)
