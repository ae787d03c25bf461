"""The OpenAI backend's two clients: its own aiohttp session, and a caller's SDK client.

A model that builds its own client posts directly (no SDK per-request machinery); what it
sends must be what the SDK would send where it matters (the URL, the key, nothing for a
keyless server), and both clients must fail the same way, one line per fault, so that a
caller's ``AsyncOpenAI`` client and ours are interchangeable above the model boundary.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import openai
import pytest

from debate._version import __version__
from debate.exceptions import ProviderError
from debate.models import Message, ModelSettings, Reply
from debate.models.openai import OpenAIModel, endpoint_url, request_headers
from debate.runtime import ClosingDraft
from tests.support.openai_server import FakeOpenAIServer
from tests.support.openai_server import Reply as ServerReply

MESSAGES = [Message(role="user", content="Go.")]
KEY = "sk-test-direct-0123456789"
OVERLOADED = json.dumps({"error": {"message": "The server is overloaded", "type": "server"}})
REFUSED_FORMAT = json.dumps(
    {"error": {"message": "Invalid schema for response_format 'ClosingDraft'", "type": "x"}}
)


class _Recorder(BaseHTTPRequestHandler):
    """Records each request's headers and path, and answers one valid completion."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.seen.append((self.path, dict(self.headers.items())))  # type: ignore[attr-defined]
        content = json.dumps({"statement": "s" * 40})
        data = json.dumps(
            {"choices": [{"message": {"content": content}, "finish_reason": "stop"}]}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def recorder() -> Iterator[tuple[str, list[tuple[str, dict[str, str]]]]]:
    """A server on 127.0.0.1 that records what it is sent; its base URL and the record."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    seen: list[tuple[str, dict[str, str]]] = []
    server.seen = seen  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def call(model: OpenAIModel, timeout: float = 30.0) -> Reply:
    """One call, the model's own client (or the caller's, for an SDK model) closed after."""

    async def go() -> Reply:
        try:
            return await model.complete(MESSAGES, ClosingDraft, ModelSettings(timeout=timeout))
        finally:
            await model.aclose()
            caller = CALLERS.pop(id(model), None)
            if caller is not None:
                await caller.close()

    return asyncio.run(go())


def failure(model: OpenAIModel, timeout: float = 30.0) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        call(model, timeout)
    return caught.value


CALLERS: dict[int, openai.AsyncOpenAI] = {}
"""The caller's own client of each SDK model, closed by :func:`call` like a caller would."""


def sdk_model(base_url: str, key: str = KEY) -> OpenAIModel:
    """A model on a caller's own SDK client (the public ``client=`` argument)."""
    client = openai.AsyncOpenAI(api_key=key, base_url=base_url, max_retries=0)
    model = OpenAIModel("m", client=client)
    CALLERS[id(model)] = client
    return model


def own_model(base_url: str) -> OpenAIModel:
    return OpenAIModel("m", base_url=base_url, api_key=KEY)


BOTH = pytest.mark.parametrize("make", [own_model, sdk_model], ids=["own", "sdk"])


# -- what the direct path sends ------------------------------------------------------------


def test_the_direct_path_sends_json_the_key_and_who_is_asking(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-not-for-this-host")
    with recorder() as (url, seen):
        call(OpenAIModel("m", base_url=url, api_key=KEY))
    [(path, headers)] = seen
    assert path == "/v1/chat/completions"
    assert headers["Authorization"] == f"Bearer {KEY}"
    assert headers["Content-Type"] == "application/json"
    assert headers["Accept"] == "application/json"
    assert headers["User-Agent"] == f"debate/{__version__}"
    assert "OpenAI-Organization" not in headers  # an OpenAI id goes to OpenAI's hosts only


def test_a_keyless_endpoint_gets_no_authorization_header_at_all() -> None:
    with recorder() as (url, seen):
        call(OpenAIModel("m", base_url=url, api_key_env=""))
    [(_, headers)] = seen
    assert not any(name.lower() == "authorization" for name in headers), headers


def test_openai_base_url_is_honoured_when_no_base_url_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with recorder() as (url, seen):
        monkeypatch.setenv("OPENAI_BASE_URL", url + "/")
        reply = call(OpenAIModel("m"))
    assert json.loads(reply.text) == {"statement": "s" * 40}
    [(path, headers)] = seen
    assert path == "/v1/chat/completions" and headers["Authorization"] == f"Bearer {KEY}"


def test_a_proxy_named_in_the_environment_carries_the_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    upstream = "http://upstream.invalid:9/v1"  # never resolved: the proxy answers
    with recorder() as (proxy, seen):
        monkeypatch.setenv("HTTP_PROXY", proxy.removesuffix("/v1"))
        reply = call(OpenAIModel("m", base_url=upstream, api_key=KEY))
    assert json.loads(reply.text) == {"statement": "s" * 40}
    [(path, headers)] = seen
    assert path == upstream + "/chat/completions"  # a proxy is asked for the absolute URL
    assert headers["Authorization"] == f"Bearer {KEY}"


def test_without_base_url_or_openai_base_url_the_request_goes_to_openai(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert endpoint_url(None) == "https://api.openai.com/v1/chat/completions"
    assert endpoint_url("http://h:1/v1/") == "http://h:1/v1/chat/completions"


def test_organization_and_project_go_to_openai_hosts_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-1")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-1")
    to_openai = request_headers("https://api.openai.com/v1/chat/completions", KEY)
    assert to_openai["OpenAI-Organization"] == "org-1"
    assert to_openai["OpenAI-Project"] == "proj-1"
    elsewhere = request_headers("https://openai.com.example.org/v1/chat/completions", KEY)
    assert "OpenAI-Organization" not in elsewhere and "OpenAI-Project" not in elsewhere
    monkeypatch.delenv("OPENAI_PROJECT_ID")
    assert "OpenAI-Project" not in request_headers("https://api.openai.com/v1", KEY)


# -- both clients, one error mapping -------------------------------------------------------


@BOTH
def test_both_clients_get_a_valid_reply(make: Any) -> None:
    with FakeOpenAIServer() as server:
        reply = call(make(server.base_url))
    assert json.loads(reply.text).keys() == {"statement"}
    assert server.authorizations == [f"Bearer {KEY}"]


def test_both_clients_fail_a_server_error_with_the_same_line() -> None:
    lines = []
    for make in (own_model, sdk_model):
        with FakeOpenAIServer(
            responder=lambda body: ServerReply(status=503, body=OVERLOADED)
        ) as server:
            error = failure(make(server.base_url))
        assert error.kind == "provider_error"
        lines.append(str(error))
    assert lines[0] == lines[1] == "m: server error 503: The server is overloaded"


@BOTH
def test_a_429_is_rate_limited_with_its_retry_after_on_both_clients(make: Any) -> None:
    with FakeOpenAIServer(
        responder=lambda body: ServerReply(status=429, headers={"retry-after-ms": "1500"})
    ) as server:
        error = failure(make(server.base_url))
    assert error.kind == "rate_limited" and error.retry_after == 1.5
    assert str(error) == "m: rate limited (429)"


@BOTH
def test_a_refused_format_steps_down_on_both_clients(make: Any) -> None:
    def responder(body: dict[str, Any]) -> ServerReply:
        if body["response_format"]["type"] == "json_schema":
            return ServerReply(status=400, body=REFUSED_FORMAT)
        return ServerReply(content=json.dumps({"statement": "fine"}))

    with FakeOpenAIServer(responder=responder) as server:
        model = make(server.base_url)
        reply = call(model)
    assert json.loads(reply.text) == {"statement": "fine"}
    assert model.mode() == "json_object_schema"


@BOTH
def test_a_reply_past_the_timeout_is_a_timeout_on_both_clients(make: Any) -> None:
    with FakeOpenAIServer(responder=lambda body: ServerReply(content="{}", hang=2.0)) as server:
        error = failure(make(server.base_url), timeout=0.3)
    assert error.kind == "timeout" and str(error) == "m: no complete reply within 0.3s"


@BOTH
def test_a_refused_connection_is_one_line_naming_the_endpoint_on_both_clients(
    make: Any,
) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    error = failure(make(url), timeout=10)
    text = str(error)
    assert "\n" not in text and "failed (" in text and error.kind == "provider_error"
    if make is own_model:
        assert text == f"m: connection to {url} failed (ClientConnectorError)"


@BOTH
def test_a_key_in_an_error_body_is_redacted_on_both_clients(make: Any) -> None:
    echo = json.dumps({"error": {"message": f"bad key {KEY}", "type": "auth"}})
    with FakeOpenAIServer(responder=lambda body: ServerReply(status=401, body=echo)) as server:
        error = failure(make(server.base_url))
    assert str(error) == "m: server error 401: bad key [redacted]"
