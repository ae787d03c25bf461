"""``debate batch --engine ray`` gives the batch one process gives, under one limit and one cap.

Every test runs on the session's local Ray of 2 CPUs (the ``ray_cluster`` fixture: real Ray,
started once, on 127.0.0.1) and its own OpenAI-compatible server on 127.0.0.1, whose replies
are a function of the request alone: the same item gets the same result whichever process
runs it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from debate._cli.main import main
from tests.support import ROOT
from tests.support.batch_helpers import argv, results, same_reply, write_batch
from tests.support.openai_server import FakeOpenAIServer, Reply

pytestmark = pytest.mark.usefixtures("ray_cluster")

PRICES = "[models.m]\nprompt = 1.0\ncompletion = 2.0\n"
"""Dollars per million tokens of the test model: every line has a cost to compare."""


def server_tokens(body: dict[str, Any], reply: Reply) -> tuple[int, int]:
    """Prompt and completion tokens as the test server counts (and reports) them."""
    prompt = sum(len(m["content"]) // 4 for m in body["messages"])
    return prompt, len(reply.content or "") // 4


def batch_workers() -> list[int]:
    """The process ids of the Ray actors running batch items (``ray::BatchWorker...``)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if command.startswith(b"ray::BatchWorker"):
            pids.append(int(entry.name))
    return pids


@pytest.mark.slow
def test_a_thousand_items_on_ray_are_the_items_of_one_process(tmp_path: Path) -> None:
    batch = write_batch(tmp_path, 1000)
    prices = tmp_path / "prices.toml"
    prices.write_text(PRICES)
    common = ("--concurrency", "64", "--prices", str(prices), "--no-cache")
    with FakeOpenAIServer(responder=same_reply) as server:
        assert main(argv(batch, server, tmp_path / "one", *common)) == 0
        calls_one = len(server.records)
        assert main(argv(batch, server, tmp_path / "ray", *common, "--engine", "ray")) == 0
        assert len(server.records) == 2 * calls_one == 2 * 10 * 1000
    one, ray = results(tmp_path / "one"), results(tmp_path / "ray")
    assert [r["id"] for r in ray] == [f"d{i}" for i in range(1000)]
    assert ray == one  # decisions, margins, agreement, calls, tokens and cost, line by line
    assert all(r["status"] == "ok" and r["cost_usd"] > 0 for r in ray)
    summary = (tmp_path / "ray" / "summary.jsonl").read_text()
    assert summary == (tmp_path / "one" / "summary.jsonl").read_text()
    for i in range(0, 1000, 37):
        a = json.loads((tmp_path / "one" / f"d{i}" / "result.json").read_text())
        b = json.loads((tmp_path / "ray" / f"d{i}" / "result.json").read_text())
        assert a["decision"] == b["decision"] and a["usage"] == b["usage"]


@pytest.mark.parametrize(
    ("flag", "cap"),
    [("--max-tokens", 60_000), ("--max-cost", 0.08)],  # each about three items of the eight
)
def test_the_cluster_never_passes_one_token_or_cost_cap(
    tmp_path: Path, flag: str, cap: float
) -> None:
    batch = write_batch(tmp_path, 8)
    prices = tmp_path / "prices.toml"
    prices.write_text(PRICES.replace("1.0", "5.0"))  # $5 / $2 per million tokens
    charged: list[tuple[int, int]] = []
    lock = threading.Lock()

    def counting(body: dict[str, Any]) -> Reply:
        reply = same_reply(body)
        with lock:
            charged.append(server_tokens(body, reply))
        return reply

    with FakeOpenAIServer(responder=counting, latency=0.02) as server:
        # one item at a time per worker: few calls in flight hold their worst case, so the
        # spend comes near the cap (with eight at once the holds alone would fill it)
        extra = ("--concurrency", "2", "--workers", "2", "--no-cache", "--prices", str(prices))
        code = main(argv(batch, server, tmp_path / "o", *extra, flag, str(cap)))
    assert code == 1  # items were stopped by the cap
    spent = (
        sum(p + c for p, c in charged)
        if flag == "--max-tokens"
        else sum(p * 5.0 + c * 2.0 for p, c in charged) / 1e6
    )
    assert spent <= cap
    # Each call holds its worst case (about 30 % of this cap with the judges' anchored
    # prompts) until it ends, so with a call in flight per worker the holds refuse the next
    # call while the spend is still short of the cap (measured 0.59 of it); a quarter shows
    # the workers spent from one ledger rather than stopping at their first call.
    assert spent > cap * 0.25
    lines = results(tmp_path / "o")
    assert len(lines) == 8
    refused = [r for r in lines if r["status"] == "failed" or r["skipped"]]
    assert refused and all("budget" in (r["error"] or "budget") for r in refused)


def test_the_cluster_shares_one_rate_limit(tmp_path: Path) -> None:
    batch = write_batch(tmp_path, 2)
    with FakeOpenAIServer(responder=same_reply) as server:
        extra = ("--concurrency", "2", "--workers", "2", "--rpm", "12", "--no-cache")
        main(argv(batch, server, tmp_path / "o", *extra, "--deadline", "3"))
    # 12 a minute in all (each worker alone would have let its own 10 calls through)
    assert len(server.records) == 12


def test_the_cluster_shares_an_endpoints_rate_limit(tmp_path: Path) -> None:
    batch = write_batch(tmp_path, 3)  # 3 x 6 debater calls, through endpoint a's 12 a minute
    with (
        FakeOpenAIServer(responder=same_reply) as limited,
        FakeOpenAIServer(responder=same_reply) as judges,
    ):
        config = tmp_path / "panel.toml"
        config.write_text(
            'pro_endpoint = "a"\ncon_endpoint = "a"\nrounds = 1\n'
            f'[endpoints.a]\nbase_url = "{limited.base_url}"\napi_key_env = ""\nrpm = 12\n'
        )
        extra = ("--concurrency", "3", "--workers", "2", "--config", str(config), "--no-cache")
        main(argv(batch, judges, tmp_path / "o", *extra, "--deadline", "3"))
    # each worker alone would have sent all the debater calls of its items
    assert len(limited.records) == 12


def test_killed_workers_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    batch = write_batch(tmp_path, 12)
    killed: list[int] = []
    answered = [0]
    lock = threading.Lock()

    def kill_the_workers_midway(body: dict[str, Any]) -> Reply:
        with lock:
            answered[0] += 1
            if answered[0] == 35 and not killed:  # three items done, four in flight
                killed.extend(batch_workers())
                for pid in killed:
                    os.kill(pid, signal.SIGKILL)
        return same_reply(body)

    with FakeOpenAIServer(responder=same_reply) as server:
        assert main(argv(batch, server, tmp_path / "one", "--no-cache")) == 0
        calls_one = len(server.records)
    with FakeOpenAIServer(responder=kill_the_workers_midway) as server:
        extra = ("--concurrency", "4", "--engine", "ray", "--no-cache")
        assert main(argv(batch, server, tmp_path / "ray", *extra)) == 0
        calls_ray = len(server.records)
    assert len(killed) == 2  # both workers were killed while they ran items
    assert calls_ray > calls_one  # the items they were running were run again
    lines = results(tmp_path / "ray")
    assert [r["id"] for r in lines] == [f"d{i}" for i in range(12)]  # each exactly once
    assert lines == results(tmp_path / "one")
    summary = (tmp_path / "ray" / "summary.jsonl").read_text().splitlines()
    assert len(summary) == 12


def test_an_item_that_kills_its_worker_every_time_fails_alone(tmp_path: Path) -> None:
    batch = write_batch(tmp_path, 3)
    kills = [0]

    def kill_whoever_runs_d0(body: dict[str, Any]) -> Reply:
        if any("team 0 " in m["content"] for m in body["messages"]):
            kills[0] += 1
            for pid in batch_workers():  # the one worker: it runs d0 alone
                os.kill(pid, signal.SIGKILL)
        return same_reply(body)

    with FakeOpenAIServer(responder=kill_whoever_runs_d0) as server:
        extra = ("--engine", "ray", "--workers", "1", "--concurrency", "1", "--no-cache")
        assert main(argv(batch, server, tmp_path / "o", *extra)) == 1
    lines = results(tmp_path / "o")
    assert [(r["id"], r["status"]) for r in lines] == [("d0", "failed"), ("d1", "ok"), ("d2", "ok")]
    assert lines[0]["error"].startswith("WorkerStopped: its worker stopped 3 times while running")
    assert kills[0] == 3  # run once and retried twice by Ray, then given up
    assert not (tmp_path / "o" / "d0").exists()


def test_an_interrupted_batch_resumes_on_ray(tmp_path: Path) -> None:
    from tests.cli.test_cli_funnel import HoldAfter, press_ctrl_c

    batch = write_batch(tmp_path, 4)
    out = tmp_path / "out"
    holder = HoldAfter(20)  # two items' ten calls each are answered; later calls are held
    with FakeOpenAIServer(responder=holder) as server:
        # its own process: it starts (and stops) a local Ray of its own
        run = ["batch", str(batch), "--out", str(out), "--concurrency", "2", "--workers", "2"]
        code, err = press_ctrl_c(run, server, holder)
    assert code == 130, err
    assert err.strip().splitlines()[-1].startswith("interrupted: ")
    first = results(out)
    assert first and all(line["status"] == "ok" and line["calls"] == 10 for line in first)
    assert all((out / line["id"] / "result.json").is_file() for line in first)
    with FakeOpenAIServer(responder=same_reply) as server:
        rerun = argv(batch, server, out, "--concurrency", "2", "--engine", "ray")
        assert main(rerun) == 0
        sent = [json.dumps(r.body["messages"]) for r in server.records]
    lines = results(out)
    assert [r["id"] for r in lines] == ["d0", "d1", "d2", "d3"]
    assert all(r["status"] == "ok" for r in lines)
    # only the items not finished ran again (an item whose calls were all answered but whose
    # result was not written yet replays them from the response cache: no request either)
    assert 0 < len(sent) <= 10 * (4 - len(first))
    for line in first:
        assert not any(f"team {line['id'][1:]} " in text for text in sent)
    assert [r for r in lines if r["id"] in {f["id"] for f in first}] == first


def test_progress_jsonl_on_ray_is_one_stream_of_every_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = write_batch(tmp_path, 3)
    with FakeOpenAIServer(responder=same_reply) as server:
        run = [a for a in argv(batch, server, tmp_path / "o") if a != "--quiet"]
        code = main([*run, "--engine", "ray", "--concurrency", "2", "--progress", "jsonl"])
        calls = len(server.records)
    assert code == 0
    stream = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert stream[0]["type"] == "plan" and stream[0]["total"] == calls == 30
    assert len([e for e in stream if e["type"] == "start"]) == calls
    assert len([e for e in stream if e["type"] == "finish"]) == calls
    finished = sorted(e["id"] for e in stream if e["type"] == "item_finish")
    assert finished == ["d0", "d1", "d2"]


def test_a_missing_key_found_by_the_workers_stops_the_batch_before_any_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    path = tmp_path / "b.jsonl"
    rows = [{"id": f"a{i}", "topic": "Should we?"} for i in range(3)]
    rows.append({"id": "b", "topic": "Or?", "config": {"api_key_env": "NO_SUCH_KEY_VAR"}})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with FakeOpenAIServer(responder=same_reply) as server:
        code = main(argv(path, server, tmp_path / "o", "--engine", "ray", "--concurrency", "2"))
        assert server.records == []  # not one call before the bad item was found
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and err.startswith("error: batch item b: ")
    assert "NO_SUCH_KEY_VAR" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--engine", "local", "--workers", "2"), "error: --workers: 2 workers need --engine pro"),
        (("--engine", "local", "--ray-address", "auto"), "error: --ray-address: a Ray cluster"),
        (("--workers", "3", "--concurrency", "2"), "error: --workers: 3 workers need --concur"),
    ],
)
def test_engine_flags_that_contradict_each_other_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], message: str
) -> None:
    batch = write_batch(tmp_path, 1)
    run = ["batch", str(batch), "--model", "scripted", "--out", str(tmp_path / "o"), *extra]
    assert main(run) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(message)
    assert not (tmp_path / "o" / "results.jsonl").exists()


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("127.0.0.1:1", "error: --ray-address: nothing answers at 127.0.0.1:1 "),
        ("cluster", "error: --ray-address: 'cluster' is not host:port"),
    ],
)
def test_a_ray_address_nobody_answers_is_one_line(
    tmp_path: Path, address: str, message: str
) -> None:
    # its own process: this one is connected to the session's Ray, which a batch then uses
    batch = write_batch(tmp_path, 1)
    run = ["batch", str(batch), "--model", "scripted", "--out", str(tmp_path / "o")]
    command = [sys.executable, "-m", "debate", *run, "--ray-address", address]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 2
    err = done.stderr.strip()
    assert len(err.splitlines()) == 1 and err.startswith(message)
    assert not (tmp_path / "o").exists()  # refused before anything was written
