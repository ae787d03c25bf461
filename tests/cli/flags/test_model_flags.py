"""The model flags, on every command that calls models; and --timeout on the embedded model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from debate.judgments import TrackRecords
from debate.models.test import TestModel
from debate.panel import identity
from debate.runtime import PromptRenderer
from tests.cli.flags.harness import (
    JSON_KEY,
    MARKER,
    MODEL_COMMANDS,
    OUTPUT,
    PROMPTS,
    Harness,
    names,
    results,
    serving,
    unscored,
)
from tests.support.openai_server import FakeOpenAIServer


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_model_names_the_model_in_every_request(command: str, h: Harness) -> None:
    first, second = h.run(command, model="model-one"), h.run(command, model="model-two")
    assert first.code == second.code == 0, first.err + second.err
    assert {r.body["model"] for r in first.records} == {"model-one"}
    assert {r.body["model"] for r in second.records} == {"model-two"}


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_base_url_sends_every_request_there(command: str, h: Harness) -> None:
    with serving() as a, serving() as b:
        run = h.run(command, server=b)
        assert run.code == 0, run.err
        assert a.records == [] and len(b.records) > 0


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_api_key_env_names_the_variable_the_key_is_read_from(
    command: str, h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLAG_TEST_KEY", "sk-flag-test")
    plain = h.run(command)
    named = h.run(command, "--api-key-env", "FLAG_TEST_KEY")
    assert plain.code == named.code == 0, named.err
    assert "Bearer sk-flag-test" not in plain.authorizations
    assert set(named.authorizations) == {"Bearer sk-flag-test"}


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_model_path_builds_the_embedded_model_from_that_file(
    command: str, h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file reaches the embedded backend, whose model then answers every call."""
    opened: list[str | None] = []

    def local_model(path: str | None, *, seed: int = 0) -> TestModel:
        opened.append(path)
        return TestModel(seed=seed, name="from-gguf")

    monkeypatch.setattr("debate.models.local.LocalModel", local_model)
    gguf = h.tmp / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    run = h.run(command, "--model-path", str(gguf), model=None)
    assert run.code == 0, run.err
    assert opened and set(opened) == {str(gguf)}
    if command == "council":
        assert {r["model"] for r in run.file("result.json")["reviews"]} == {"from-gguf"}
    elif command != "calibrate":
        assert {e.model for r in results(command, run) for e in r.evaluations} == {"from-gguf"}


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_a_missing_model_path_is_bad_input_before_any_call(command: str, h: Harness) -> None:
    """``batch --model-path`` used to be ignored: a missing file gave "1 of 1 ok"."""
    run = h.run(command, "--model-path", str(h.tmp / "missing.gguf"), model=None)
    assert run.code == 2 and "--model-path" in run.err and "not a file" in run.err
    assert not (run.folder / OUTPUT[command]).exists()


def test_model_path_and_base_url_together_are_refused(h: Harness) -> None:
    gguf = h.tmp / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    run = h.run("batch", "--model-path", str(gguf))
    assert run.code == 2 and "--model-path" in run.err and run.records == []


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_config_file_sets_the_panel(command: str, h: Harness) -> None:
    config = h.tmp / "panel.toml"
    config.write_text(
        '[[judges]]\nname = "alpha"\nrole = "technical"\n'
        "weights = {logic = 0.25, evidence = 0.25, responsiveness = 0.25, honesty = 0.25}\n"
        '[[judges]]\nname = "beta"\nrole = "risk"\n'
        "weights = {logic = 0.25, evidence = 0.25, responsiveness = 0.25, honesty = 0.25}\n"
    )
    plain, configured = h.run(command), h.run(command, "--config", str(config))
    assert plain.code == configured.code == 0, configured.err
    assert names(command, plain) == {"technical", "business", "risk", "general"}
    assert names(command, configured) == {"alpha", "beta"}
    assert len(configured.judge_requests) * 2 == len(plain.judge_requests)


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_judges_chooses_the_roles(command: str, h: Harness) -> None:
    run = h.run(command, "--judges", "technical,risk")
    assert run.code == 0, run.err
    assert names(command, run) == {"technical", "risk"}


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_templates_replace_the_shipped_prompts(command: str, h: Harness) -> None:
    folder = h.tmp / "templates"
    folder.mkdir()
    for name in ("judge_system.md.jinja", "council_system.md.jinja"):
        text = (PROMPTS / name).read_text()
        (folder / name).write_text(f"{text}\n{MARKER}\n")
    plain, custom = h.run(command), h.run(command, "--templates", str(folder))
    assert plain.code == custom.code == 0, custom.err
    assert not any(MARKER in r.system for r in plain.records)
    assert custom.judge_requests and all(MARKER in r.system for r in custom.judge_requests)


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_seed_is_sent_with_every_request(command: str, h: Harness) -> None:
    run = h.run(command, "--seed", "4242")
    assert run.code == 0, run.err
    assert run.records and {r.body.get("seed") for r in run.records} == {4242}


@pytest.fixture
def no_provider_retries(h: Harness) -> str:
    """A config without provider retries, so a timed-out call is not tried again."""
    path = h.tmp / "no-retries.toml"
    path.write_text("provider_retries = 0\n")
    return str(path)


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_timeout_bounds_each_call(command: str, h: Harness, no_provider_retries: str) -> None:
    with serving(hang_reviews=0.6) as server:
        patient = h.run(command, "--config", no_provider_retries, "--timeout", "30", server=server)
        hasty = h.run(command, "--config", no_provider_retries, "--timeout", "0.1", server=server)
    assert patient.code == hasty.code == 0, patient.err + hasty.err
    assert unscored(command, patient) == []
    reasons = unscored(command, hasty)
    assert reasons and set(reasons) <= {"timeout", "no call"}


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_deadline_leaves_late_judges_unscored(command: str, h: Harness) -> None:
    """Council included: a reviewer still working at the deadline is unscored (timeout)."""
    # a debate's budget also covers its debaters (answering at once, yet not instantly)
    hang, deadline = (2.0, "1") if command == "run" else (0.6, "0.2")
    with serving(hang_reviews=hang) as server:
        free = h.run(command, server=server)
        bounded = h.run(command, "--deadline", deadline, server=server)
    assert free.code == bounded.code == 0, free.err + bounded.err
    assert unscored(command, free) == []
    reasons = unscored(command, bounded)
    assert reasons and set(reasons) <= {"timeout", "no call"}
    if command == "council":
        details = [r["detail"] for r in bounded.file("result.json")["reviews"]]
        assert all(f"deadline of {deadline} s" in d for d in details)


def test_deadline_stops_a_debate_whose_debaters_are_late(h: Harness) -> None:
    with FakeOpenAIServer(latency=0.5) as server:
        run = h.run("run", "--deadline", "0.2", server=server)
    assert run.code == 1 and "deadline of 0.2 s" in run.err


def test_council_deadline_covers_the_generated_answers(h: Harness) -> None:
    argv = ["council", "Which database?", "--generate", "m1,m2"]
    with FakeOpenAIServer(latency=0.5) as server:
        run = h.run("council", "--deadline", "0.2", server=server, argv=argv)
    assert run.code == 1 and "deadline of 0.2 s" in run.err


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_max_retries_is_the_number_of_re_asks(command: str, h: Harness) -> None:
    with serving(invalid_reviews=True) as server:
        once = h.run(command, "--max-retries", "0", server=server)
        thrice = h.run(command, "--max-retries", "2", server=server)
    assert once.code == thrice.code == 0, once.err + thrice.err
    assert len(once.judge_requests) > 0
    assert len(thrice.judge_requests) == 3 * len(once.judge_requests)


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_cache_replays_completed_calls(command: str, h: Harness) -> None:
    cache = h.tmp / "shared-cache.sqlite"
    with serving() as server:  # same endpoint and seed: the same requests
        first = h.run(command, "--cache", str(cache), "--seed", "7", server=server)
        again = h.run(command, "--cache", str(cache), "--seed", "7", server=server)
    assert first.code == again.code == 0, first.err + again.err
    assert cache.is_file() and not (first.folder / "cache.sqlite").exists()
    assert len(first.records) > 0 and again.records == []


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_no_cache_calls_again_and_writes_no_cache(command: str, h: Harness) -> None:
    cached = h.run(command)
    out = h.folder()
    first = h.run(command, "--no-cache", out=out)
    again = h.run(command, "--no-cache", out=out)
    assert cached.code == first.code == again.code == 0, again.err
    assert (cached.folder / "cache.sqlite").is_file()
    assert not (out / "cache.sqlite").exists()
    if command != "batch":  # a batch skips items whose result.json is in --out already
        assert len(again.records) == len(first.records) > 0


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_out_is_where_the_output_goes(command: str, h: Harness) -> None:
    out = h.tmp / "chosen" / "folder"
    run = h.run(command, out=out)
    assert run.code == 0, run.err
    assert (out / OUTPUT[command]).is_file()


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_json_prints_machine_readable_output(command: str, h: Harness) -> None:
    plain, machine = h.run(command), h.run(command, "--json")
    assert plain.code == machine.code == 0, machine.err
    with pytest.raises(json.JSONDecodeError):
        json.loads(plain.out)
    assert JSON_KEY[command] in json.loads(machine.out)


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_quiet_silences_progress(command: str, h: Harness) -> None:
    plain, quiet = h.run(command), h.run(command, "--quiet")
    assert plain.code == quiet.code == 0, quiet.err
    assert plain.err.strip() and quiet.err == ""


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_store_chooses_the_run_store(command: str, h: Harness) -> None:
    default, chosen = h.tmp / "store.sqlite", h.tmp / "elsewhere" / "runs.sqlite"
    run = h.run(command, "--store", str(chosen))
    assert run.code == 0, run.err
    assert chosen.is_file() and not default.exists()


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_no_store_records_nothing(command: str, h: Harness) -> None:
    default = h.tmp / "store.sqlite"
    run = h.run(command, "--no-store")
    assert run.code == 0, run.err
    assert not default.exists()
    assert h.run(command).code == 0 and default.is_file()


@pytest.mark.parametrize("command", ["run", "judge", "batch"])
def test_no_store_still_weights_the_vote_by_track_records(command: str, h: Harness) -> None:
    """--no-store means "do not record this run"; it no longer switches the weights off."""
    first = h.run(command, "--judges", "technical,risk", "--seed", "1")
    weights = results(command, first)[0].vote.judge_weights
    # then technical is found wrong on every calibration item
    key = identity("technical", "m", PromptRenderer(None))
    TrackRecords(h.tmp / "store.sqlite").add(
        [(key, f"item{n}", "debate", "CON", "PRO") for n in range(20)]
    )
    for extra in ([], ["--no-store"]):
        run = h.run(command, "--judges", "technical,risk", "--seed", "1", *extra)
        assert run.code == 0, run.err
        weighted = results(command, run)[0].vote.judge_weights
        assert weighted["technical"] < weights["technical"]
        assert weighted["risk"] == pytest.approx(weights["risk"])


# --- the embedded model's timeout, on a stand-in for llama.cpp ---------------------------


class SlowLlama:
    """Generates one token every 10 ms until max_tokens, checking the stopping criteria the
    way llama-cpp-python's ``create_completion`` does; its chat call goes through that."""

    def __init__(self) -> None:
        self._input_ids: list[int] = []
        self.generated = 0

    def create_completion(self, *, max_tokens: int, stopping_criteria: Any = None) -> Any:
        import time

        finish = "length"
        for _ in range(max_tokens):
            time.sleep(0.01)
            self.generated += 1
            if stopping_criteria is not None and stopping_criteria(self._input_ids, None):
                finish = "stop"
                break
        usage = {"prompt_tokens": 1, "completion_tokens": self.generated}
        message = {"role": "assistant", "content": "{}"}
        return {"choices": [{"message": message, "finish_reason": finish}], "usage": usage}

    def create_chat_completion(self, *, max_tokens: int, **_: Any) -> Any:
        return self.create_completion(max_tokens=max_tokens, stopping_criteria=None)


def test_timeout_stops_the_embedded_model_mid_generation(tmp_path: Path) -> None:
    """LocalModel used to ignore --timeout: llama.cpp ran to max_tokens whatever it said."""
    import asyncio

    from pydantic import BaseModel

    from debate.exceptions import ProviderError
    from debate.models import Message, ModelSettings

    local = pytest.importorskip("debate.models.local")
    pytest.importorskip("llama_cpp")
    gguf = tmp_path / "stand-in.gguf"
    gguf.write_bytes(b"GGUF")
    model = local.LocalModel(gguf)
    model._llm = slow = SlowLlama()
    messages = [Message(role="user", content="hi")]

    class Empty(BaseModel):
        pass

    with pytest.raises(ProviderError) as caught:
        asyncio.run(model.complete(messages, Empty, ModelSettings(max_tokens=500, timeout=0.1)))
    assert caught.value.kind == "timeout" and "0.1s" in str(caught.value)
    assert slow.generated < 100  # stopped near 0.1 s, not after 500 tokens (5 s)
    slow.generated = 0
    reply = asyncio.run(model.complete(messages, Empty, ModelSettings(max_tokens=5, timeout=30)))
    assert reply.finish_reason == "length" and slow.generated == 5
    assert "create_completion" not in vars(slow)  # the stopping hook is gone after the call
