"""An OpenAI-compatible chat-completions server for tests, on 127.0.0.1.

It answers every request with a reply that fits the request's JSON schema (placeholder
text, seeded scores) unless a ``responder`` says otherwise, after a fixed latency, and
records each request with its start and end times so tests can see what was in flight.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from debate.models.test import fill_schema

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


@dataclass
class Record:
    start: float
    end: float
    body: dict[str, Any]
    status: int

    @property
    def system(self) -> str:
        return str(self.body["messages"][0]["content"])

    @property
    def user(self) -> str:
        return str(self.body["messages"][-1]["content"])


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
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                server.authorizations.append(self.headers.get("Authorization", ""))
                start = time.monotonic()
                with server._lock:
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    reply = server._reply(body)
                    if server.latency:
                        time.sleep(server.latency)
                    if reply.hang:
                        time.sleep(reply.hang)
                    self._send(reply, body)
                finally:
                    with server._lock:
                        server.in_flight -= 1
                        server.records.append(Record(start, time.monotonic(), body, reply.status))

            def _send(self, reply: Reply, body: dict[str, Any]) -> None:
                if reply.status != 200:
                    payload = reply.body or json.dumps(
                        {"error": {"message": "injected", "type": "server_error"}}
                    )
                else:
                    payload = json.dumps(
                        {
                            "id": "chatcmpl-test",
                            "object": "chat.completion",
                            "created": 0,
                            "model": body.get("model", "test"),
                            "choices": [
                                {
                                    "index": 0,
                                    "message": {
                                        "role": "assistant",
                                        "content": reply.content,
                                        "refusal": reply.refusal,
                                    },
                                    "finish_reason": reply.finish_reason,
                                }
                            ],
                            "usage": {
                                "prompt_tokens": sum(
                                    len(m["content"]) // 4 for m in body["messages"]
                                ),
                                "completion_tokens": len(reply.content or "") // 4,
                                "total_tokens": 0,
                            },
                        }
                    )
                data = payload.encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        class Server(ThreadingHTTPServer):
            request_queue_size = 512  # the default 5 drops connections under concurrency

        self._server = Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _reply(self, body: dict[str, Any]) -> Reply:
        if self.responder is not None:
            return self.responder(body)
        return Reply(content=json.dumps(self.valid(body)))

    def valid(self, body: dict[str, Any]) -> Any:
        schema = body["response_format"]["json_schema"]["schema"]
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
