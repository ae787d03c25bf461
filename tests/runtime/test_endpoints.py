"""Endpoints: each debater's and judge's calls reach its own server with its own key only.

Three OpenAI-compatible servers on 127.0.0.1 log every request's Authorization header and
model. Each has its own key variable (``KEY_A``, ``KEY_B``) or none (``C`` is keyless), and
``OPENAI_API_KEY`` holds ``leak``: a key that no endpoint names, so it must reach nobody.
"""

from __future__ import annotations

import json
import random
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from debate import RunConfig, run_debate_sync
from debate._cli.main import main
from debate.council import run_council_sync
from debate.exceptions import ConfigurationError
from debate.models.openai import OpenAIModel
from debate.models.test import fill_schema
from debate.records import Candidate, DebateResult, build_config
from debate.runtime import ModelPool
from debate.runtime._limiter import LimitedModel
from tests.support import ROOT
from tests.support.openai_server import request_schema

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

KEYS = {"KEY_A": "keyForServerA", "KEY_B": "keyForServerB", "OPENAI_API_KEY": "leak"}
TOPIC = "Should we adopt the plan?"


class LoggingServer:
    """Answers every chat completion with a valid reply; logs (Authorization, model) pairs.

    ``reports`` is the model name the server puts in its replies (a snapshot, say); None
    reports the requested one.
    """

    def __init__(self, reports: str | None = None) -> None:
        self.log: list[tuple[str | None, str]] = []
        self.reports = reports
        self._rng = random.Random(0)
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                data = fake.answer(self.headers.get("Authorization"), body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def answer(self, authorization: str | None, body: dict[str, Any]) -> str:
        with self._lock:
            self.log.append((authorization, body["model"]))
            content = json.dumps(fill_schema(request_schema(body), self._rng))
        message = {"role": "assistant", "content": content}
        return json.dumps(
            {
                "model": self.reports or body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5},
            }
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def headers(self) -> set[str | None]:
        return {auth for auth, _ in self.log}

    @property
    def models(self) -> set[str]:
        return {model for _, model in self.log}

    def __enter__(self) -> LoggingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, LoggingServer]]:
    """Servers ``a`` (key KEY_A), ``b`` (key KEY_B) and ``c`` (keyless, reports a snapshot)."""
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    with ExitStack() as stack:
        yield {
            "a": stack.enter_context(LoggingServer()),
            "b": stack.enter_context(LoggingServer()),
            "c": stack.enter_context(LoggingServer(reports="served-snapshot-0613")),
        }


def endpoints_toml(servers: dict[str, LoggingServer]) -> str:
    return (
        f'[endpoints.a]\nbase_url = "{servers["a"].url}"\napi_key_env = "KEY_A"\n\n'
        f'[endpoints.b]\nbase_url = "{servers["b"].url}"\napi_key_env = "KEY_B"\n\n'
        f'[endpoints.c]\nbase_url = "{servers["c"].url}"\napi_key_env = ""\n\n'
    )


MIXED_PANEL = """
model = "shared-model"
pro_endpoint = "a"
con_endpoint = "b"
con_model = "con-model"

[[judges]]
role = "technical"
endpoint = "a"
model = "judge-a"

[[judges]]
role = "business"
endpoint = "b"
model = "judge-b"

[[judges]]
role = "risk"
endpoint = "c"
model = "judge-c"
"""


def assert_own_keys(servers: dict[str, LoggingServer]) -> None:
    """Each server saw only its own key (``c`` none at all), and ``leak`` reached nobody."""
    assert servers["a"].headers == {"Bearer keyForServerA"}
    assert servers["b"].headers == {"Bearer keyForServerB"}
    assert servers["c"].headers == {None}
    everything = json.dumps([s.log for s in servers.values()])
    assert "leak" not in everything


def test_each_debater_and_judge_reaches_its_own_endpoint_with_its_own_key(
    servers: dict[str, LoggingServer], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "panel.toml"
    config.write_text(MIXED_PANEL + endpoints_toml(servers))
    out = tmp_path / "out"
    code = main(["run", TOPIC, "--config", str(config), "--out", str(out), "--quiet"])
    assert code == 0, capsys.readouterr().err
    assert_own_keys(servers)
    # PRO and the technical judge on a, CON and the business judge on b, risk on c
    assert servers["a"].models == {"shared-model", "judge-a"}
    assert servers["b"].models == {"con-model", "judge-b"}
    assert servers["c"].models == {"judge-c"}
    result = DebateResult.model_validate_json((out / "result.json").read_text())
    rows = result.usage.per_call
    for name, server in servers.items():
        sent = sum(r.attempts for r in rows if r.endpoint == name)
        assert sent == len(server.log), name  # the result says where every call went
    by_actor = {(r.actor, r.endpoint) for r in rows if r.phase == "judge"}
    assert by_actor == {("technical", "a"), ("business", "b"), ("risk", "c")}
    for row in rows:  # the model that answered: c reports a snapshot, a and b echo the name
        expected = "served-snapshot-0613" if row.endpoint == "c" else row.model
        assert row.answered_by == expected


def test_council_reviewers_follow_their_judges_endpoints(
    servers: dict[str, LoggingServer],
) -> None:
    cfg = build_config(_toml(MIXED_PANEL + endpoints_toml(servers)))
    candidates = [Candidate(id="x", text="Yes, because."), Candidate(id="y", text="No.")]
    result = run_council_sync("Is it safe?", candidates, config=cfg, seed=1)
    assert_own_keys(servers)
    assert servers["a"].models == {"judge-a"}
    assert servers["b"].models == {"judge-b"}
    assert servers["c"].models == {"judge-c"}
    assert {(r.actor, r.endpoint) for r in result.usage.per_call} == {
        ("technical", "a"),
        ("business", "b"),
        ("risk", "c"),
    }


def _toml(text: str) -> dict[str, Any]:
    return tomllib.loads(text)


def test_batch_items_run_where_their_results_say(
    servers: dict[str, LoggingServer], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The batch-wide model on a, one item on another model, one item's panel on b and c."""
    endpoints = _toml(endpoints_toml(servers))["endpoints"]
    judges_bc = [
        {"role": "technical", "endpoint": "b"},
        {"role": "risk", "endpoint": "c", "model": "risk-on-c"},
    ]
    rows = [
        {"id": "plain", "topic": TOPIC},
        {"id": "other-model", "topic": TOPIC, "config": {"model": "item-model"}},
        {
            "id": "moved",
            "topic": TOPIC,
            "config": {
                "model": "moved-model",
                "base_url": servers["b"].url,
                "api_key_env": "KEY_B",
                "endpoints": endpoints,
                "judges": judges_bc,
            },
        },
    ]
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    argv = ["batch", str(batch), "--model", "batch-model", "--base-url", servers["a"].url]
    argv += ["--api-key-env", "KEY_A", "--out", str(out), "--quiet", "--no-cache"]
    code = main([*argv, "--judges", "technical,risk"])
    assert code == 0, capsys.readouterr().err
    assert_own_keys(servers)
    results = {
        r["id"]: DebateResult.model_validate_json((out / r["id"] / "result.json").read_text())
        for r in rows
    }
    assert results["other-model"].config.model == "item-model"
    assert results["moved"].config.base_url == servers["b"].url
    # every call of every item was sent where its result.json says, and nowhere else
    for name, server in servers.items():
        logged: dict[str, int] = {}
        for _, model in server.log:
            logged[model] = logged.get(model, 0) + 1
        said: dict[str, int] = {}
        for result in results.values():
            for call in result.usage.per_call:
                if call.endpoint == name or (
                    call.endpoint == "default" and name == _host(servers, result.config.base_url)
                ):
                    said[call.model] = said.get(call.model, 0) + call.attempts
        assert logged == said, name
    assert servers["a"].models == {"batch-model", "item-model"}
    assert servers["b"].models == {"moved-model"}
    assert servers["c"].models == {"risk-on-c"}


def _host(servers: dict[str, LoggingServer], base_url: str | None) -> str | None:
    return next((name for name, s in servers.items() if s.url == base_url), None)


def test_a_missing_key_stops_the_batch_before_any_call(
    servers: dict[str, LoggingServer],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KEY_B")
    endpoints = _toml(endpoints_toml(servers))["endpoints"]
    rows = [
        {"id": "fine", "topic": TOPIC},
        {"id": "on-b", "topic": TOPIC, "config": {"endpoints": endpoints, "pro_endpoint": "b"}},
    ]
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(json.dumps(r) + "\n" for r in rows))
    argv = ["batch", str(batch), "--model", "m", "--base-url", servers["a"].url]
    argv += ["--api-key-env", "KEY_A", "--out", str(tmp_path / "out"), "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: batch item on-b: ") and len(err.splitlines()) == 1
    assert "endpoint 'b'" in err and "KEY_B" in err
    assert all(not s.log for s in servers.values())  # not one call was made


def test_the_default_endpoint_on_another_host_needs_its_key_named(
    servers: dict[str, LoggingServer], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """OPENAI_API_KEY is set, but --base-url names another host: it is not sent there."""
    argv = ["run", TOPIC, "--model", "m", "--base-url", servers["a"].url, "--quiet"]
    assert main([*argv, "--out", str(tmp_path / "out"), "--no-store"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--api-key-env" in err and "OPENAI_API_KEY" in err
    assert not servers["a"].log


def test_a_keyless_default_endpoint_sends_no_key(
    servers: dict[str, LoggingServer], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["judge", str(ROOT / "examples" / "meeting_transcript.json")]
    argv += ["--model", "m", "--base-url", servers["a"].url, "--api-key-env", ""]
    code = main([*argv, "--out", str(tmp_path / "out"), "--quiet", "--no-store"])
    assert code == 0, capsys.readouterr().err
    assert servers["a"].log and servers["a"].headers == {None}


def test_an_unknown_endpoint_is_refused_at_load_naming_the_field() -> None:
    judges = [{"role": "technical"}, {"role": "risk", "endpoint": "nowhere"}]
    with pytest.raises(ConfigurationError) as caught:
        build_config({"judges": judges}, "panel.toml")
    message = str(caught.value)
    assert message.startswith("panel.toml: judges.1.endpoint: unknown endpoint 'nowhere'")
    with pytest.raises(ConfigurationError, match="pro_endpoint: unknown endpoint 'x'"):
        build_config({"pro_endpoint": "x"})
    with pytest.raises(ConfigurationError, match="endpoints.default"):
        build_config({"endpoints": {"default": {"api_key_env": ""}}})
    with pytest.raises(ConfigurationError, match=r"endpoints\.a\.api_key_env: Field required"):
        build_config({"endpoints": {"a": {"base_url": "http://127.0.0.1:1/v1"}}})


def test_a_judges_own_base_url_is_refused_and_points_to_endpoints() -> None:
    judges = [{"role": "technical", "base_url": "http://elsewhere/v1"}, {"role": "risk"}]
    with pytest.raises(ConfigurationError) as caught:
        build_config({"judges": judges})
    assert "judges.0" in str(caught.value) and "[endpoints.NAME]" in str(caught.value)
    # results written before endpoints carry base_url = null: they still load
    old = RunConfig().model_dump()
    old["judges"][0]["base_url"] = None
    assert RunConfig.model_validate(old) == RunConfig()


def test_models_on_one_endpoint_share_its_rate_limiter(servers: dict[str, LoggingServer]) -> None:
    data = _toml(endpoints_toml(servers))
    data["endpoints"]["a"]["rpm"] = 30
    config = build_config(data)
    item = build_config({**config.model_dump(), "model": "another"})
    pool = ModelPool(config)
    first, second = pool.get("m1", "a"), pool.get(None, "a", config=item)
    assert isinstance(first, LimitedModel) and isinstance(second, LimitedModel)
    assert first.limiter is second.limiter and first.limiter.rpm == 30
    assert second.name == "another" and second.endpoint == "a"
    assert not isinstance(pool.get("m1", "b"), LimitedModel)  # b has no limits


PRICED = """
[endpoints.a.prices]
shared-model = { prompt = 1.0, completion = 2.0 }
judge-a = { prompt = 3.0, completion = 4.0 }

[endpoints.b.prices]
con-model = { prompt = 5.0, completion = 6.0 }
judge-b = { prompt = 7.0, completion = 8.0, cached = 1.0 }
"""


def test_endpoint_prices_cost_the_calls_made_there(servers: dict[str, LoggingServer]) -> None:
    data = _toml(MIXED_PANEL + endpoints_toml(servers) + PRICED)
    data["endpoints"]["c"]["prices"] = {"judge-c": {"prompt": 9.0, "completion": 10.0}}
    result = run_debate_sync(TOPIC, config=build_config(data), seed=2)
    tables = {m: p for e in data["endpoints"].values() for m, p in e["prices"].items()}
    expected = 0.0
    for server in servers.values():
        for _, model in server.log:  # the server counts 10 prompt and 5 completion tokens
            expected += (10 * tables[model]["prompt"] + 5 * tables[model]["completion"]) / 1e6
    assert result.usage.cost_usd == pytest.approx(expected)
    assert expected > 0


def test_a_model_priced_twice_or_a_bad_price_table_is_refused_before_any_call(
    servers: dict[str, LoggingServer],
) -> None:
    data = _toml(MIXED_PANEL + endpoints_toml(servers) + PRICED)
    data["endpoints"]["c"]["prices"] = {"judge-a": {"prompt": 0.5, "completion": 4.0}}
    with pytest.raises(ConfigurationError, match="endpoints.c.prices: judge-a is priced"):
        run_debate_sync(TOPIC, config=build_config(data), seed=2)
    data["endpoints"]["c"]["prices"] = {"judge-c": {"prompt": -1.0, "completion": 4.0}}
    with pytest.raises(ConfigurationError, match=r"endpoints\.c\.prices\.judge-c\.prompt"):
        run_debate_sync(TOPIC, config=build_config(data), seed=2)
    data["endpoints"]["c"]["prices"] = "no-such-prices.toml"
    with pytest.raises(ConfigurationError, match="no-such-prices.toml: cannot read it"):
        run_debate_sync(TOPIC, config=build_config(data), seed=2)
    assert all(not s.log for s in servers.values())


def test_a_callers_own_model_sits_beside_configured_endpoints(
    servers: dict[str, LoggingServer],
) -> None:
    """Python API: a judge's model built by the caller, the rest from the config's endpoints."""
    mine = OpenAIModel("mine", base_url=servers["c"].url, api_key_env="KEY_B")
    cfg = build_config(_toml(MIXED_PANEL + endpoints_toml(servers)))
    result = run_debate_sync(TOPIC, config=cfg, judges={"risk": mine}, seed=3)
    assert servers["c"].models == {"mine"} and servers["c"].headers == {"Bearer keyForServerB"}
    assert servers["a"].headers == {"Bearer keyForServerA"}
    risk = [r for r in result.usage.per_call if r.actor == "risk"]
    assert risk and all(r.endpoint is None and r.model == "mine" for r in risk)
    assert all(r.answered_by == "served-snapshot-0613" for r in risk)


def test_a_replayed_call_records_the_model_that_first_answered(
    servers: dict[str, LoggingServer], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", TOPIC, "--model", "m", "--base-url", servers["c"].url, "--api-key-env", ""]
    argv += ["--cache", str(tmp_path / "cache.sqlite"), "--quiet", "--no-store", "--seed", "4"]
    results = []
    for out in ("first", "again"):
        assert main([*argv, "--out", str(tmp_path / out)]) == 0, capsys.readouterr().err
        text = (tmp_path / out / "result.json").read_text()
        results.append(DebateResult.model_validate_json(text))
    calls = len(servers["c"].log)
    assert calls == results[0].usage.calls  # the second run sent nothing: all replayed
    for result in results:
        rows = result.usage.per_call
        assert rows and {(r.endpoint, r.answered_by) for r in rows} == {
            ("default", "served-snapshot-0613")
        }


def test_a_key_given_where_its_variable_goes_is_refused_without_repeating_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    secret = "sk-live-0123456789abcdef"
    with pytest.raises(ConfigurationError) as caught:
        build_config({"endpoints": {"a": {"api_key_env": secret}}}, "panel.toml")
    assert str(caught.value).startswith("panel.toml.endpoints.a.api_key_env: not an env")
    assert secret not in str(caught.value)
    argv = ["run", TOPIC, "--model", "m", "--base-url", "http://127.0.0.1:9/v1"]
    assert main([*argv, "--api-key-env", secret, "--quiet", "--no-store"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --api-key-env: not an environment variable name")
    assert secret not in err
