"""The OpenAI-compatible transport against a server that misbehaves in every way it can.

Each test scripts one server behaviour on 127.0.0.1 and checks what the client makes of it:
structured-output negotiation (which form is sent, when it steps down, what it remembers),
malformed replies, a reply trickled past the timeout, a key echoed back in the reply.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from debate._cli.main import main
from debate.exceptions import ProviderError
from debate.models import Message, ModelSettings, Reply, _openai_forms
from debate.models._schema import reply_max_tokens
from debate.models.openai import FORMS, OpenAIModel
from debate.runtime import ClosingDraft, judge_reply
from tests.support.helpers import served
from tests.support.openai_server import (
    LLAMA_JSON_SCHEMA_500,
    FakeOpenAIServer,
    Record,
    refuse_json_schema,
    request_schema,
)
from tests.support.openai_server import Reply as ServerReply

JUDGE = judge_reply(("PRO-1", "CON-1"))
MESSAGES = [Message(role="system", content="You judge."), Message(role="user", content="Go.")]
SENTINEL = "sk-test-ECHOED-0123456789-not-a-real-key"

LLAMA_500 = LLAMA_JSON_SCHEMA_500
STRICT_500 = json.dumps(
    {"error": {"message": "response_format: strict mode is not available on this backend"}}
)
OPENAI_400 = json.dumps(
    {
        "error": {
            "message": "Invalid schema for response_format 'Closing': In context=(), "
            "'additionalProperties' is required to be supplied and to be false.",
            "type": "invalid_request_error",
            "param": "response_format",
            "code": None,
        }
    }
)
VALIDATION_422 = json.dumps(
    {
        "detail": [
            {
                "type": "extra_forbidden",
                "loc": ["body", "response_format", "json_schema", "strict"],
                "msg": "Extra inputs are not permitted",
            }
        ]
    }
)
CONTEXT_400 = json.dumps(
    {
        "error": {
            "message": "This model's maximum context length is 8192 tokens. However, your "
            "messages resulted in 9120 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
)
MAX_TOKENS_422 = json.dumps(
    {
        "detail": [
            {
                "type": "less_than_equal",
                "loc": ["body", "max_tokens"],
                "msg": "Input should be less than or equal to 4096",
            }
        ]
    }
)


def complete(
    server: FakeOpenAIServer,
    schema: type[BaseModel] = ClosingDraft,
    *,
    model: OpenAIModel | None = None,
    timeout: float = 30.0,
) -> Reply:
    """One call through a fresh (or the given) model, closed afterwards."""
    model = model or OpenAIModel("m", base_url=server.base_url, api_key_env="")

    async def go() -> Reply:
        try:
            return await model.complete(MESSAGES, schema, ModelSettings(timeout=timeout))
        finally:
            await model.aclose()

    return asyncio.run(go())


def modes(server: FakeOpenAIServer) -> list[str]:
    return [r.mode for r in server.records]


def valid(body: dict[str, Any], server: FakeOpenAIServer) -> ServerReply:
    return ServerReply(content=json.dumps(server.valid(body)))


# -- structured-output negotiation -------------------------------------------------------


def test_a_500_refusing_json_schema_steps_down_to_json_object_and_is_remembered() -> None:
    """llama-cpp-python's server: json_schema → HTTP 500 with a validation body."""

    def llama(body: dict[str, Any]) -> ServerReply:
        if body["response_format"]["type"] == "json_schema":
            return ServerReply(status=500, body=LLAMA_500)
        return valid(body, server)

    with FakeOpenAIServer(responder=llama) as server:
        model = OpenAIModel("m", base_url=server.base_url, api_key_env="")
        first = complete(server, JUDGE, model=model)
        second = complete(server, JUDGE, model=model)
    JUDGE.model_validate_json(first.text)
    JUDGE.model_validate_json(second.text)
    # it says the json_schema type is not taken at all: the non-strict form is not tried
    assert modes(server) == ["strict", "json_object_schema", "json_object_schema"]
    assert model.mode() == "json_object_schema"
    # the schema travels both in response_format (a grammar for llama.cpp) and in a message
    last = server.records[-1]
    assert last.response_format["schema"] == request_schema(last.body)
    assert last.body["messages"][-1]["role"] == "system"
    # no max_tokens given: the bound derived from the reply schema, as ask would send
    assert {r.max_tokens for r in server.records} == {reply_max_tokens(JUDGE)}


@pytest.mark.parametrize(
    ("status", "body"), [(400, OPENAI_400), (422, VALIDATION_422), (500, STRICT_500)]
)
def test_a_refused_strict_schema_steps_down_one_form_whatever_the_status(
    status: int, body: str
) -> None:
    def strictless(request: dict[str, Any]) -> ServerReply:
        fmt = request["response_format"]
        if fmt["type"] == "json_schema" and fmt["json_schema"]["strict"]:
            return ServerReply(status=status, body=body)
        return valid(request, server)

    with FakeOpenAIServer(responder=strictless) as server:
        model = OpenAIModel("m", base_url=server.base_url, api_key_env="")
        complete(server, model=model)
        complete(server, model=model)
    assert modes(server) == ["strict", "json_schema", "json_schema"]


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (400, CONTEXT_400),
        (422, MAX_TOKENS_422),
        (500, json.dumps({"error": {"message": "CUDA out of memory", "type": "server_error"}})),
        (503, "<html><body>upstream overloaded</body></html>"),
    ],
)
def test_an_unrelated_error_never_changes_the_form(status: int, body: str) -> None:
    """A prompt over the context limit used to switch every later call to non-strict."""
    broken = {"on": True}

    def responder(request: dict[str, Any]) -> ServerReply:
        if broken["on"]:
            return ServerReply(status=status, body=body)
        return valid(request, server)

    with FakeOpenAIServer(responder=responder) as server:
        model = OpenAIModel("m", base_url=server.base_url, api_key_env="")
        with pytest.raises(ProviderError) as caught:
            complete(server, model=model)
        broken["on"] = False
        complete(server, model=model)
    assert modes(server) == ["strict", "strict"]
    assert model.mode() == "strict"
    message = str(caught.value)
    assert f"server error {status}" in message and "\n" not in message


def test_the_form_is_remembered_per_endpoint_and_model_for_every_schema() -> None:
    """Issue 28 item 6: the form was kept per schema and per model object, and a debate's
    reply schemas differ by call (their argument ids), so every call probed again."""

    def strictless(request: dict[str, Any]) -> ServerReply:
        if request["response_format"]["type"] == "json_schema":
            if request["response_format"]["json_schema"]["strict"]:
                return ServerReply(status=400, body=OPENAI_400)
        return valid(request, server)

    with FakeOpenAIServer(responder=strictless) as server:
        model = OpenAIModel("m", base_url=server.base_url, api_key_env="")
        complete(server, ClosingDraft, model=model)
        complete(server, JUDGE, model=model)
        # another object for the same endpoint and model (a run's judges are separate ones)
        twin = OpenAIModel("m", base_url=server.base_url + "/", api_key_env="")
        complete(server, JUDGE, model=twin)
        other = OpenAIModel("other", base_url=server.base_url, api_key_env="")
        complete(server, JUDGE, model=other)  # another model on that server learns its own
    assert modes(server) == ["strict", "json_schema", "json_schema", "json_schema", "strict",
                             "json_schema"]  # fmt: skip
    assert model.mode() == twin.mode() == other.mode() == "json_schema"


def test_concurrent_refusals_step_down_in_order_and_never_back_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def llama(body: dict[str, Any]) -> ServerReply:
        if body["response_format"]["type"] == "json_schema":
            return ServerReply(status=500, body=LLAMA_500)
        return valid(body, server)

    # The fake refuses after 50 ms, half the default refusal window; on a loaded machine it
    # could arrive later. The order of the steps is this test's subject, not the window's
    # length (the tests after it hold that), so the window is made wide.
    monkeypatch.setattr(_openai_forms, "REFUSAL_FLOOR", 1.0)
    with FakeOpenAIServer(responder=llama, latency=0.05) as server:
        model = OpenAIModel("m", base_url=server.base_url, api_key_env="")

        async def many() -> list[Reply]:
            try:
                calls = (model.complete(MESSAGES, JUDGE, ModelSettings()) for _ in range(8))
                return await asyncio.gather(*calls)
            finally:
                await model.aclose()

        replies = asyncio.run(many())
    assert all(JUDGE.model_validate_json(r.text) for r in replies)
    assert model.mode() == "json_object_schema"
    assert Counter(modes(server))["json_object_schema"] == 8
    assert "json_object" not in modes(server)  # never stepped past the form that works
    # the first call probed; the others waited for its answer instead of each being refused
    assert modes(server) == ["strict"] + ["json_object_schema"] * 8


def test_calls_wait_for_a_probe_no_longer_than_the_form_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A request still out after the wait was taken: the others go ahead, not one by one."""
    monkeypatch.setattr(FORMS, "wait", 0.1)
    with FakeOpenAIServer(latency=1.0) as server:
        model = OpenAIModel("m", base_url=server.base_url, api_key_env="")

        async def two() -> list[Reply]:
            try:
                calls = (model.complete(MESSAGES, JUDGE, ModelSettings()) for _ in range(2))
                return await asyncio.gather(*calls)
            finally:
                await model.aclose()

        start = time.perf_counter()
        asyncio.run(two())
        took = time.perf_counter() - start
    assert server.max_in_flight == 2 and took < 1.9
    assert modes(server) == ["strict", "strict"] and model.mode() == "strict"


def two_first_calls(server: FakeOpenAIServer, sdk: bool = False) -> list[Record]:
    """Two concurrent first calls to ``server``: its records, in the order they were sent."""

    async def two() -> list[Reply]:
        import openai

        client = openai.AsyncOpenAI(api_key="x", base_url=server.base_url, max_retries=0)
        given = client if sdk else None
        model = OpenAIModel("m", base_url=server.base_url, api_key_env="", client=given)
        try:
            calls = (model.complete(MESSAGES, JUDGE, ModelSettings()) for _ in range(2))
            return await asyncio.gather(*calls)
        finally:
            await model.aclose()
            await client.close()

    asyncio.run(two())
    assert modes(server) == ["strict", "strict"]
    return sorted(server.records, key=lambda record: record.start)


def test_a_call_goes_ahead_once_the_probe_would_have_been_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A refusal comes within a round trip or two of the probe's connection; waiting out the
    probe's whole reply held the second request of every run's first step back by the
    model's latency (up to a second)."""
    monkeypatch.setattr(FORMS, "wait", 60.0)  # only the refusal window can end the wait
    with FakeOpenAIServer(latency=1.0) as server:
        probe, second = two_first_calls(server)
    assert second.start < probe.replied  # sent while the probe was still out


def test_a_call_waits_for_a_probe_sent_through_a_caller_s_sdk_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The SDK's connections are not timed: no refusal window, the answer (or the wait)."""
    monkeypatch.setattr(FORMS, "wait", 60.0)
    with FakeOpenAIServer(latency=0.3) as server:
        probe, second = two_first_calls(server, sdk=True)
    assert second.start >= probe.replied


def test_a_ten_call_debate_against_a_server_refusing_json_schema_sends_at_most_11(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 28 item 6: llama-cpp-python's server answers json_schema with a 500; a 10-call
    debate sent 30 requests (every call probed strict, then json_schema, then stepped down)."""
    with FakeOpenAIServer(responder=refuse_json_schema) as server:
        argv = ["run", "Should we adopt the plan?", "--model", "m", "--base-url",
                server.base_url, "--api-key-env", "", "--seed", "3", "--no-store", "--quiet",
                "--no-cache", "--out", "out"]  # fmt: skip
        assert main(argv) == 0
    capsys.readouterr()
    result = json.loads(Path("out/result.json").read_text())
    sent = modes(server)
    print(f"\n10-call debate against a server refusing json_schema: {len(sent)} requests")
    assert result["usage"]["calls"] == 10 and result["usage"]["retries"] == 0
    assert Counter(sent)["json_object_schema"] == 10
    assert len(sent) <= 11


def test_a_server_refusing_every_form_is_a_one_line_provider_error() -> None:
    with FakeOpenAIServer(responder=lambda b: ServerReply(status=400, body=OPENAI_400)) as server:
        with pytest.raises(ProviderError) as caught:
            complete(server)
    assert modes(server) == ["strict", "json_schema", "json_object_schema", "json_object"]
    assert "Invalid schema for response_format" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_what_is_sent_in_strict_mode_is_valid_for_openai_strict_and_forces_score_ranges() -> None:
    with FakeOpenAIServer() as server:
        complete(server, JUDGE)
    fmt = server.records[0].response_format
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    objects, integers = _nodes(schema, "object"), _nodes(schema, "integer")
    assert objects and integers
    for node in objects:  # OpenAI strict: closed objects, every property required
        assert node["additionalProperties"] is False
        assert sorted(node["required"]) == sorted(node["properties"])
    for node in integers:  # a grammar forces an enum; it ignores minimum/maximum
        assert node["enum"] == list(range(1, 11))
        assert "minimum" not in node and "maximum" not in node


def _nodes(schema: Any, kind: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(schema, dict):
        if schema.get("type") == kind:
            found.append(schema)
        for value in schema.values():
            found += _nodes(value, kind)
    elif isinstance(schema, list):
        for value in schema:
            found += _nodes(value, kind)
    return found


# -- malformed replies -------------------------------------------------------------------

MALFORMED = {
    "html_200": ServerReply(raw="<html><body>Bad gateway</body></html>", content_type="text/html"),
    "truncated_envelope": ServerReply(content='{"statement": "fine"}', cut=60),
    "reset_mid_body": ServerReply(content='{"statement": "fine"}', reset_after=40),
    "empty_choices": ServerReply(content="{}", choices=[]),
    "choice_without_message": ServerReply(choices=[{"index": 0, "finish_reason": "stop"}]),
    "json_error_object_200": ServerReply(raw='{"error": {"message": "overloaded"}}'),
    "content_not_text": ServerReply(choices=[{"message": {"content": 7}, "finish_reason": "stop"}]),
}


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_a_malformed_reply_is_a_retryable_one_line_provider_error(kind: str) -> None:
    with FakeOpenAIServer(responder=lambda body: MALFORMED[kind]) as server:
        with pytest.raises(ProviderError) as caught:
            complete(server)
    message = str(caught.value)
    assert caught.value.kind == "provider_error"
    assert "\n" not in message and len(message) < 200
    assert ("malformed reply" in message) or ("connection" in message and "failed" in message)
    assert modes(server) == ["strict"]  # a broken reply is not a refused format


def _first_attempt_broken(kind: str, server: FakeOpenAIServer) -> Any:
    """Break the first attempt of every request, answer the retry validly."""
    seen: Counter[str] = Counter()

    def responder(body: dict[str, Any]) -> ServerReply:
        key = hashlib.sha256(json.dumps(body["messages"]).encode()).hexdigest()
        seen[key] += 1
        return MALFORMED[kind] if seen[key] == 1 else valid(body, server)

    return responder


@pytest.mark.parametrize("kind", ["html_200", "truncated_envelope", "reset_mid_body"])
def test_a_debate_survives_malformed_replies(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """40 of 40 such debates crashed with a traceback before; now each fault is retried."""
    with FakeOpenAIServer() as server:
        server.responder = _first_attempt_broken(kind, server)
        code = main(
            ["run", "Adopt it?", *served(server), "--out", str(tmp_path), "--no-cache", "--quiet"]
        )
    assert code == 0, capsys.readouterr().err
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["usage"]["retries"] == result["usage"]["calls"] // 2
    assert json.loads((tmp_path / "run.json").read_text())["status"] == "finished"


def test_a_server_that_only_sends_html_fails_the_run_cleanly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(responder=lambda body: MALFORMED["html_200"]) as server:
        code = main(["run", "Adopt it?", *served(server), "--out", str(tmp_path), "--quiet"])
    err = capsys.readouterr().err
    assert code == 1
    assert "Traceback" not in err and "malformed reply: an HTML page" in err
    assert json.loads((tmp_path / "run.json").read_text())["status"] == "failed"


# -- the timeout bounds the whole call ---------------------------------------------------


def test_a_reply_trickled_past_the_timeout_fails_it() -> None:
    """Before: the timeout was the gap allowed between bytes, so a 3 s trickle passed 1 s."""

    def drip(body: dict[str, Any]) -> ServerReply:
        return ServerReply(content=json.dumps(server.valid(body)), drip=3.0)

    with FakeOpenAIServer(responder=drip) as server:
        start = time.monotonic()
        with pytest.raises(ProviderError) as caught:
            complete(server, timeout=1.0)
        elapsed = time.monotonic() - start
    assert caught.value.kind == "timeout"
    assert elapsed < 2.5
    assert "within 1.0s" in str(caught.value)


def test_a_trickle_inside_the_timeout_is_accepted() -> None:
    def drip(body: dict[str, Any]) -> ServerReply:
        return ServerReply(content=json.dumps(server.valid(body)), drip=0.4)

    with FakeOpenAIServer(responder=drip) as server:
        reply = complete(server, timeout=5.0)
    ClosingDraft.model_validate_json(reply.text)


# -- the client's key never comes back out -----------------------------------------------


def _echo_key(server: FakeOpenAIServer) -> Any:
    """Answer validly, with the request's bearer token inside every text field."""

    def responder(body: dict[str, Any]) -> ServerReply:
        token = server.authorizations[-1].removeprefix("Bearer ")
        return ServerReply(content=json.dumps(_plant(server.valid(body), token)))

    return responder


def _plant(value: Any, token: str) -> Any:
    if isinstance(value, dict):
        return {k: _plant(v, token) for k, v in value.items()}
    if isinstance(value, str):
        return f"key {token}" if len(value) > 20 else value  # enum values are shorter
    return value


def test_a_key_echoed_in_the_reply_is_redacted() -> None:
    def responder(body: dict[str, Any]) -> ServerReply:
        token = server.authorizations[-1].removeprefix("Bearer ")
        content = json.dumps({"statement": f"your key is {token}"})
        return ServerReply(content=content, refusal=f"no, {token}")

    with FakeOpenAIServer(responder=responder) as server:
        reply = complete(server, model=OpenAIModel("m", base_url=server.base_url, api_key=SENTINEL))
    assert server.authorizations == [f"Bearer {SENTINEL}"]
    assert SENTINEL not in reply.text and SENTINEL not in (reply.refusal or "")
    assert json.loads(reply.text) == {"statement": "your key is [redacted]"}
    assert reply.refusal == "no, [redacted]"


def test_an_echoed_key_reaches_no_file_and_no_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    with FakeOpenAIServer() as server:
        server.responder = _echo_key(server)
        code = main(
            [
                "run",
                "Adopt it?",
                *served(server),
                "--api-key-env",
                "OPENAI_API_KEY",
                "--out",
                str(tmp_path),
                "--json",
            ]
        )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert server.authorizations and set(server.authorizations) == {f"Bearer {SENTINEL}"}
    assert all(SENTINEL not in json.dumps(r.body) for r in server.records)  # nor any prompt
    assert "[redacted]" in (tmp_path / "result.json").read_text()
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SENTINEL.encode() not in path.read_bytes(), path
    assert SENTINEL not in out and SENTINEL not in err


def test_concurrent_first_calls_build_one_http_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first calls of a run arrive together; each building a client cost seconds."""
    import debate.models.openai as module

    built: list[object] = []
    real = module._Direct
    lookup = module._env_proxy

    def counting(*args: Any) -> Any:
        client = real(*args)
        built.append(client)
        return client

    def slow_lookup(url: str) -> Any:
        time.sleep(0.01)  # widen the window in which a second build could start
        return lookup(url)

    monkeypatch.setattr(module, "_Direct", counting)
    monkeypatch.setattr(module, "_env_proxy", slow_lookup)
    model = OpenAIModel("m", base_url="http://127.0.0.1:9/v1", api_key_env="")

    async def first_calls() -> set[int]:
        clients = await asyncio.gather(*(model._client() for _ in range(50)))
        await model.aclose()
        again = await model._client()  # a closed model builds a fresh client
        await model.aclose()
        return {id(c) for c in clients} | {id(again)}

    assert len(asyncio.run(first_calls())) == 2
    assert len(built) == 2
