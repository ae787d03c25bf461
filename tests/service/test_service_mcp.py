"""``debate mcp``, driven by the MCP SDK's own client over stdio and streamable HTTP.

Each test starts the real server as a child process (``python -m debate._cli.main mcp`` or
``python -m tests.support.mcp_planted_server``, the same server over planted models) and talks to it
with ``stdio_client``/``streamable_http_client`` and ``ClientSession``, as an assistant would.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from debate._cli.main import main
from tests.support import ROOT
from tests.support.helpers import free_port, transcript
from tests.support.openai_server import FakeOpenAIServer

TOPIC = "Should a small startup adopt a microservices architecture from day one?"
TOOLS = {"run_debate", "judge_transcript", "rank_candidates", "decide"}
Session = Callable[[ClientSession], Awaitable[Any]]


def talk(args: list[str], work: Session, tmp_path: Path, env: dict[str, str] | None = None) -> Any:
    """Start ``python ARGS`` with the SDK's stdio client, initialise, run ``work``."""
    params = StdioServerParameters(
        command=sys.executable,
        args=args,
        env={"PYTHONPATH": str(ROOT), **(env or {})},
        cwd=str(ROOT),
    )

    async def session() -> Any:
        with (tmp_path / "server.err").open("a") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as client:
                    await client.initialize()
                    return await work(client)

    return anyio.run(session)


def cli(*flags: str) -> list[str]:
    return ["-m", "debate._cli.main", "mcp", *flags]


PLANTED = ["-m", "tests.support.mcp_planted_server"]


def structured(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def verdict_rows() -> list[dict[str, Any]]:
    """Two items: judges split 2-1 on the first, all three say B on the second."""
    first = [("a", "A"), ("b", "A"), ("c", "B")]
    return [{"item": "1", "judge": j, "verdict": v} for j, v in first] + [
        {"item": "2", "judge": j, "verdict": "B"} for j in "abc"
    ]


# --- tools and their schemas -------------------------------------------------------------


def test_the_four_tools_are_listed_with_their_input_and_output_schemas(tmp_path: Path) -> None:
    async def work(client: ClientSession) -> Any:
        return (await client.list_tools()).tools

    tools = {t.name: t for t in talk(cli("--model", "scripted"), work, tmp_path)}
    assert set(tools) == TOOLS
    debate = tools["run_debate"].input_schema
    assert debate["required"] == ["topic"]
    assert {"topic", "judges", "arguments", "rounds", "seed"} <= set(debate["properties"])
    assert "ctx" not in debate["properties"]  # the SDK's context is not an argument
    assert tools["judge_transcript"].input_schema["required"] == ["transcript"]
    assert "Transcript" in tools["judge_transcript"].input_schema["$defs"]
    council = tools["rank_candidates"].input_schema
    assert set(council["required"]) == {"question", "candidates"}
    assert set(council["$defs"]["CouncilCandidate"]["required"]) == {"id", "text"}
    assert tools["decide"].input_schema["required"] == ["rows"]
    for name in ("run_debate", "judge_transcript", "rank_candidates"):
        output = tools[name].output_schema
        assert output is not None and set(output["required"]) == {"verdict", "result"}
    decide_output = tools["decide"].output_schema
    assert decide_output is not None and set(decide_output["required"]) == {"verdicts", "result"}


# --- a debate: the verdict, the record, progress ------------------------------------------


def test_a_debate_returns_the_verdict_and_the_record_with_progress(tmp_path: Path) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    async def work(client: ClientSession) -> CallToolResult:
        args = {"topic": TOPIC, "arguments": 2, "rounds": 1, "seed": 7}
        return await client.call_tool("run_debate", args, progress_callback=progress)

    result = talk(PLANTED, work, tmp_path)
    reply = structured(result)
    verdict, record = reply["verdict"], reply["result"]
    # every judge scores PRO 8 and CON 3: the panel agrees PRO wins, by 5 points
    assert verdict["kind"] == "debate"
    assert (verdict["outcome"], verdict["winner"]) == ("winner", "PRO")
    assert verdict["margin_points"] == pytest.approx(5.0)
    low, high = verdict["margin_points_interval"]["low"], verdict["margin_points_interval"]["high"]
    assert low <= 5.0 <= high and verdict["margin_points_interval"]["level"] == 0.95
    assert verdict["margin"] > 0 and verdict["calibration"] in ("minmax", "zscore")
    assert verdict["reasons"] and verdict["recommendation"]
    assert verdict["diagnostics"]["judges_scored"] == 4
    assert verdict["diagnostics"]["unscored"] == {}
    assert verdict["usage"]["calls"] == 10  # 6 debater moves, 4 judges
    # the whole record, as result.json has it
    assert record["decision"]["outcome"] == "winner" and record["seed"] == 7
    assert record["config"]["arguments"] == 2
    assert len(record["transcript"]["arguments"]) == 4
    # the assistant's text: the answer first, and the verdict as JSON
    assert result.content[0].text.startswith("PRO wins")
    assert json.loads(result.content[1].text) == verdict
    # progress: the plan (0 of 10), then one step per finished call, in order, to the total
    assert len(seen) == 11
    assert [p for p, _, _ in seen] == list(range(11))
    assert {t for _, t, _ in seen} == {10}
    assert seen[-1][0] == seen[-1][1]
    assert seen[0][2] == "run: 10 model calls"
    assert seen[-1][2] is not None and seen[-1][2].startswith("judge ")


def test_judge_transcript_and_rank_candidates_return_their_verdicts(tmp_path: Path) -> None:
    seen: list[float] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append(done)

    async def work(client: ClientSession) -> tuple[CallToolResult, CallToolResult]:
        judged = await client.call_tool(
            "judge_transcript",
            {"transcript": transcript(2, 2).model_dump(mode="json"), "judges": ["risk", "general"]},
        )
        candidates = [
            {"id": "x", "text": "a bad answer"},
            {"id": "y", "text": "a good answer"},
            {"id": "z", "text": "another bad answer"},
        ]
        council = await client.call_tool(
            "rank_candidates",
            {"question": "Which plan?", "candidates": candidates},
            progress_callback=progress,
        )
        return judged, council

    judged, council = talk(PLANTED, work, tmp_path)
    judgement = structured(judged)["verdict"]
    assert (judgement["kind"], judgement["winner"]) == ("judgement", "PRO")
    evaluations = structured(judged)["result"]["evaluations"]
    assert [e["judge"] for e in evaluations] == ["risk", "general"]
    ranked = structured(council)["verdict"]
    assert ranked["kind"] == "council"
    assert (ranked["outcome"], ranked["winner"]) == ("winner", "y")
    assert [r["candidate"] for r in ranked["ranking"]][0] == "y"
    assert ranked["ranking"][1]["tied_with_next"] is True  # x and z got the same scores
    assert structured(council)["result"]["kind"] == "council"
    assert seen == [0, 1, 2, 3, 4]  # the plan, then each of the four reviewers


# --- bad input ---------------------------------------------------------------------------


def test_a_bad_argument_is_a_tool_error_that_names_the_field(tmp_path: Path) -> None:
    async def work(client: ClientSession) -> list[CallToolResult]:
        calls = [
            ("run_debate", {"topic": TOPIC, "arguments": 11}),
            ("run_debate", {"topic": TOPIC, "rounds": "many"}),
            ("run_debate", {"topic": TOPIC, "judges": ["astrologer"]}),
            ("run_debate", {"topic": TOPIC, "judges": ["risk"]}),
            ("run_debate", {"topic": "   "}),
            ("judge_transcript", {"transcript": {"topic": "t", "arguments": "none"}}),
            ("rank_candidates", {"question": "Q?", "candidates": [{"id": "a", "text": "x"}]}),
            ("decide", {"rows": [{"item": "1", "judge": "a", "verdict": "A"}], "scale": "5"}),
        ]
        return [await client.call_tool(name, args) for name, args in calls]

    results = talk(cli("--model", "scripted"), work, tmp_path)
    assert all(r.is_error for r in results)
    errors = [r.structured_content["error"] for r in results if r.structured_content]
    assert len(errors) == len(results)
    assert [e["field"] for e in errors] == [
        "arguments",
        "rounds",
        "judges",
        "judges",
        "topic",
        "transcript.arguments",
        "candidates",
        "scale",
    ]
    assert errors[0]["message"] == "arguments: 11 is out of range; use 1 to 10"
    assert "astrologer" in errors[2]["message"] and "technical" in errors[2]["message"]
    assert errors[3]["message"].startswith("judges: the panel has 1 regular judge")
    for result, error in zip(results, errors, strict=True):
        assert error["kind"] == "configuration"
        assert result.content[0].text == error["message"]
        assert "\n" not in error["message"]


def test_a_number_sent_as_text_and_an_argument_no_tool_takes_are_refused(tmp_path: Path) -> None:
    async def work(client: ClientSession) -> list[CallToolResult]:
        calls = [
            ("run_debate", {"topic": TOPIC, "arguments": "3"}),
            ("run_debate", {"topic": TOPIC, "seed": True}),
            ("run_debate", {"topic": TOPIC, "base_url": "http://127.0.0.1:9/v1"}),
            ("judge_transcript", {"transcript": transcript().model_dump(), "model": "gpt-x"}),
            ("decide", {"rows": verdict_rows(), "seed": "1"}),
            # a list sent as JSON text (as some assistants do) is still a list
            ("run_debate", {"topic": TOPIC, "arguments": 1, "rounds": 0,
                            "judges": '["risk", "general"]'}),
        ]  # fmt: skip
        return [await client.call_tool(name, args) for name, args in calls]

    *refused, accepted = talk(cli("--model", "scripted"), work, tmp_path)
    errors = [r.structured_content["error"] for r in refused if r.structured_content]
    assert all(r.is_error for r in refused) and len(errors) == len(refused)
    assert [e["field"] for e in errors] == [
        "arguments",
        "seed",
        "base_url",
        "model",
        "seed",
    ]
    for result, error in zip(refused, errors, strict=True):
        assert error["kind"] == "configuration" and "\n" not in error["message"]
        assert result.content[0].text == error["message"]
    assert errors[0]["message"].startswith("arguments: Input should be a valid integer")
    assert errors[2]["message"].startswith("base_url: not an argument of run_debate; it takes ")
    assert "endpoints and keys are the server's" in errors[2]["message"]
    assert structured(accepted)["result"]["config"]["arguments"] == 1


# --- decide ------------------------------------------------------------------------------


def test_decide_returns_one_decision_per_item(tmp_path: Path) -> None:
    async def work(client: ClientSession) -> CallToolResult:
        return await client.call_tool("decide", {"rows": verdict_rows()})

    reply = structured(talk(cli("--model", "scripted"), work, tmp_path))
    verdicts = {v["item"]: v for v in reply["verdicts"]}
    assert set(verdicts) == {"1", "2"}
    assert (verdicts["2"]["outcome"], verdicts["2"]["winner"]) == ("winner", "B")
    assert verdicts["1"]["winner"] is None  # a 2-1 split is no verdict
    assert verdicts["2"]["usage"] is None  # no model was called
    assert verdicts["2"]["diagnostics"]["judges_scored"] == 3
    assert reply["result"]["summary"]["items"] == 2
    assert len(reply["result"]["decisions"]) == 2


def test_decide_rows_are_checked_like_a_file(tmp_path: Path) -> None:
    rows = [
        {"item": "1", "option": "A", "judge": "a", "dimension": "overall", "score": 9},
        {"item": "1", "option": "B", "judge": "a", "dimension": "overall", "score": 2},
    ]

    async def work(client: ClientSession) -> list[CallToolResult]:
        return [
            await client.call_tool("decide", {"rows": rows}),
            await client.call_tool("decide", {"rows": rows, "scale": "1-10"}),
        ]

    no_scale, scaled = talk(cli("--model", "scripted"), work, tmp_path)
    assert no_scale.is_error and no_scale.structured_content is not None
    assert no_scale.structured_content["error"]["field"] == "scale"
    assert structured(scaled)["verdicts"][0]["options"] == ["A", "B"]


# --- the flags: models from the server's config, keys from the environment ---------------


def test_model_base_url_and_api_key_env_choose_the_server_and_its_key(tmp_path: Path) -> None:
    key = "sk-mcp-test-secret"

    async def work(client: ClientSession) -> CallToolResult:
        roles = ["technical", "risk"]
        args = {"transcript": transcript(1, 1).model_dump(mode="json"), "judges": roles}
        return await client.call_tool("judge_transcript", args)

    with FakeOpenAIServer() as fake:
        flags = ["--model", "m-served", "--base-url", fake.base_url, "--api-key-env", "MCP_KEY"]
        result = talk(cli(*flags), work, tmp_path, env={"MCP_KEY": key})
    assert [r.body["model"] for r in fake.records] == ["m-served"] * 2
    assert fake.authorizations == [f"Bearer {key}"] * 2
    reply = structured(result)
    assert reply["result"]["evaluations"][0]["model"] == "m-served"
    assert reply["result"]["config"]["api_key_env"] == "MCP_KEY"  # the name, never the key
    assert key not in json.dumps(reply) + "".join(c.text for c in result.content)
    assert key not in (tmp_path / "server.err").read_text()


def test_config_sets_the_panel_and_a_tool_argument_overrides_it(tmp_path: Path) -> None:
    config = tmp_path / "panel.toml"
    config.write_text("arguments = 1\nrounds = 0\n")

    async def work(client: ClientSession) -> list[CallToolResult]:
        return [
            await client.call_tool("run_debate", {"topic": TOPIC}),
            await client.call_tool("run_debate", {"topic": TOPIC, "arguments": 2}),
        ]

    by_config, overridden = talk(
        cli("--model", "scripted", "--config", str(config)), work, tmp_path
    )
    assert len(structured(by_config)["result"]["transcript"]["arguments"]) == 2
    assert structured(by_config)["result"]["transcript"]["cross_examinations"] == []
    assert len(structured(overridden)["result"]["transcript"]["arguments"]) == 4
    assert structured(overridden)["result"]["config"]["rounds"] == 0


def test_bad_flags_are_refused_before_the_server_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mcp", "--model-path", str(tmp_path / "missing.gguf")]) == 2
    assert "--model-path" in capsys.readouterr().err
    assert main(["mcp", "--model", "gpt-x"]) == 2  # OpenAI's API with no OPENAI_API_KEY
    assert "OPENAI_API_KEY" in capsys.readouterr().err
    assert main(["mcp", "--base-url", "http://127.0.0.1:9/v1"]) == 2
    assert "--model" in capsys.readouterr().err
    assert main(["mcp", "--port", "0"]) == 2


def test_model_path_builds_the_server_on_that_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from debate.service import _mcp

    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    built: list[str | None] = []
    served: list[tuple[str, str, int]] = []

    def build(config: Any, *, model_path: str | None = None, models: Any = None) -> Any:
        built.append(model_path)
        return "server"

    monkeypatch.setattr(_mcp, "build_server", build)
    monkeypatch.setattr(_mcp, "serve", lambda s, t, h, p: served.append((t, h, p)))
    assert main(["mcp", "--model-path", str(gguf)]) == 0
    assert built == [str(gguf)]
    assert served == [("stdio", "127.0.0.1", 8766)]


# --- streamable HTTP ---------------------------------------------------------------------


def wait_for(port: int, process: subprocess.Popen[bytes], seconds: float = 30.0) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        assert process.poll() is None, "the server exited"
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on port {port}")


def test_streamable_http_serves_the_tools_at_mcp(tmp_path: Path) -> None:
    port = free_port()
    flags = ["--transport", "http", "--host", "127.0.0.1", "--port", str(port)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with (tmp_path / "server.err").open("w") as errlog:
        process = subprocess.Popen(
            [sys.executable, *cli("--model", "scripted", *flags)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=errlog,
        )
    seen: list[float] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append(done)

    async def session() -> tuple[set[str], CallToolResult]:
        async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write):
            async with ClientSession(read, write) as client:
                await client.initialize()
                names = {t.name for t in (await client.list_tools()).tools}
                args = {"topic": TOPIC, "arguments": 1, "rounds": 0, "judges": ["risk", "general"]}
                result = await client.call_tool("run_debate", args, progress_callback=progress)
                return names, result

    try:
        wait_for(port, process)
        names, result = anyio.run(session)
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert names == TOOLS
    verdict = structured(result)["verdict"]
    assert verdict["outcome"] in ("winner", "too_close", "irreconcilable", "insufficient")
    assert verdict["reasons"]
    assert seen == [0, 1, 2, 3, 4, 5, 6]  # plan, 2 openings, 2 closings, 2 judges


def test_without_the_sdk_the_command_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "debate.service._mcp", None)  # import raises ImportError
    assert main(["mcp", "--model", "scripted"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "[server]" in err and "mcp SDK 2" in err
