"""A batch over worker processes and over shards gives the batch one process gives.

Every test starts its OpenAI-compatible server on 127.0.0.1; the replies are a function of
the request alone, so the same item gets the same result whichever process runs it.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import random
import signal
from pathlib import Path
from typing import Any

import pytest

from debate._cli.main import main
from debate.batch._shards import shard_of
from debate.models.test import fill_schema
from tests.openai_server import FakeOpenAIServer, Reply


def same_reply(body: dict[str, Any]) -> Reply:
    """A reply fitting the schema, drawn from a seed that is the request's digest."""
    text = json.dumps(body["messages"], sort_keys=True)
    seed = int(hashlib.sha256(text.encode()).hexdigest()[:12], 16)
    schema = body["response_format"]["json_schema"]["schema"]
    return Reply(content=json.dumps(fill_schema(schema, random.Random(seed))))


def write_batch(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "batch.jsonl"
    rows = [{"id": f"d{i}", "topic": f"Should team {i} adopt the plan?"} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def argv(batch: Path, server: FakeOpenAIServer, out: Path, *extra: str) -> list[str]:
    return [
        "batch",
        str(batch),
        "--model",
        "m",
        "--base-url",
        server.base_url,
        "--api-key-env",
        "",
        "--out",
        str(out),
        "--quiet",
        "--no-store",
        "--seed",
        "3",
        *extra,
    ]


def results(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_two_workers_give_the_results_of_one_process(tmp_path: Path) -> None:
    batch = write_batch(tmp_path, 6)
    with FakeOpenAIServer(responder=same_reply) as server:
        assert main(argv(batch, server, tmp_path / "one", "--concurrency", "4")) == 0
        calls_one = len(server.records)
        two = argv(batch, server, tmp_path / "two", "--concurrency", "4", "--workers", "2")
        assert main(two) == 0
        assert len(server.records) == 2 * calls_one
    assert results(tmp_path / "one") == results(tmp_path / "two")
    assert [r["id"] for r in results(tmp_path / "two")] == [f"d{i}" for i in range(6)]
    summary = (tmp_path / "two" / "summary.jsonl").read_text()
    assert summary == (tmp_path / "one" / "summary.jsonl").read_text()
    for i in range(6):
        one = json.loads((tmp_path / "one" / f"d{i}" / "result.json").read_text())
        two = json.loads((tmp_path / "two" / f"d{i}" / "result.json").read_text())
        assert one["decision"] == two["decision"]


def test_two_workers_together_never_pass_a_shared_token_cap(tmp_path: Path) -> None:
    batch = write_batch(tmp_path, 8)
    cap = 60_000  # about three items' calls of the eight
    charged: list[int] = []

    def counting(body: dict[str, Any]) -> Reply:
        reply = same_reply(body)  # the tokens the server reports for it, as it counts them
        prompt = sum(len(m["content"]) // 4 for m in body["messages"])
        charged.append(prompt + len(reply.content or "") // 4)
        return reply

    with FakeOpenAIServer(responder=counting, latency=0.02) as server:
        # one item at a time per worker: few calls in flight hold their worst case, so the
        # spend comes near the cap (with eight at once the holds alone would fill it)
        extra = ("--concurrency", "2", "--workers", "2", "--max-tokens", str(cap), "--no-cache")
        assert main(argv(batch, server, tmp_path / "o", *extra)) == 1  # debaters were stopped
    lines = results(tmp_path / "o")
    assert sum(charged) <= cap
    assert sum(charged) > cap * 0.6  # the two workers did spend it (about 53,000 here)
    refused = [r for r in lines if r["status"] == "failed" or r["skipped"]]
    assert refused and all("budget" in (r["error"] or "budget") for r in refused)


def test_shards_merged_are_the_unsharded_batch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = write_batch(tmp_path, 7)
    with FakeOpenAIServer(responder=same_reply) as server:
        assert main(argv(batch, server, tmp_path / "all")) == 0
        for k in (1, 2):
            assert main(argv(batch, server, tmp_path / f"s{k}", "--shard", f"{k}/2")) == 0
    mine = {k: [r["id"] for r in results(tmp_path / f"s{k}")] for k in (1, 2)}
    assert all(shard_of(i, 2) == k for k in (1, 2) for i in mine[k])
    assert mine[1] and mine[2] and sorted(mine[1] + mine[2]) == [f"d{i}" for i in range(7)]
    capsys.readouterr()
    merged = tmp_path / "merged"
    folders = [str(tmp_path / "s2"), str(tmp_path / "s1")]
    assert main(["merge", *folders, "--out", str(merged)]) == 0
    assert "7 of 7 items ok" in capsys.readouterr().out
    assert results(merged) == results(tmp_path / "all")
    summary = [json.loads(line) for line in (merged / "summary.jsonl").read_text().splitlines()]
    assert all((merged / s["report"]).is_file() for s in summary)
    assert (merged / "d0" / "result.json").is_file()
    # one shard alone, or one twice, is refused in one line
    assert main(["merge", str(tmp_path / "s1"), "--out", str(tmp_path / "m2")]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: merge: shard 2/2 is missing; give its --out folder too"
    )
    assert main(["merge", *folders, folders[0], "--out", str(tmp_path / "m3")]) == 2
    assert "are both shard 2/2; give each shard once" in capsys.readouterr().err


def test_a_folder_holds_one_shard(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    batch = write_batch(tmp_path, 3)
    with FakeOpenAIServer(responder=same_reply) as server:
        assert main(argv(batch, server, tmp_path / "s", "--shard", "1/2")) == 0
        capsys.readouterr()
        assert main(argv(batch, server, tmp_path / "s", "--shard", "2/2")) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --shard: ") and "holds shard 1/2 of this batch file" in err


def test_a_killed_worker_keeps_its_finished_items_and_a_rerun_finishes_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = write_batch(tmp_path, 6)
    out = tmp_path / "out"
    killed: list[int] = []

    def kill_once_an_item_is_done(body: dict[str, Any]) -> Reply:
        if not killed and list(out.glob("*/result.json")):
            victim = multiprocessing.active_children()[0]
            assert victim.pid is not None
            killed.append(victim.pid)
            os.kill(victim.pid, signal.SIGKILL)
        return same_reply(body)

    with FakeOpenAIServer(responder=kill_once_an_item_is_done) as server:
        run = argv(batch, server, out, "--concurrency", "2", "--workers", "2")
        assert main(run) == 1
        lines = results(out)
        stdout = capsys.readouterr().out
        assert killed
        failed = [r for r in lines if r["status"] == "failed"]
        assert failed and all("WorkerStopped: worker " in r["error"] for r in failed)
        assert any("(signal 9) while running it" in r["error"] for r in failed)
        assert "failed" in stdout
        done = {r["id"] for r in lines if r["status"] == "ok"}
        assert done and all((out / i / "result.json").is_file() for i in done)
        assert len(lines) == 6  # every item has a line: none hangs the parent
        server.records.clear()
        assert main(run) == 0  # the re-run runs only what was not finished
        again = {json.loads(json.dumps(r.body["messages"]))[-1]["content"] for r in server.records}
    assert all(r["status"] == "ok" for r in results(out))
    for item_id in done:
        topic = f"team {item_id[1:]} "
        assert not any(topic in text for text in again)


def test_workers_share_one_rate_limit(tmp_path: Path) -> None:
    batch = write_batch(tmp_path, 2)
    with FakeOpenAIServer(responder=same_reply) as server:
        extra = ("--concurrency", "2", "--workers", "2", "--rpm", "12", "--no-cache")
        main(argv(batch, server, tmp_path / "o", *extra, "--deadline", "3"))
    # 12 a minute in all (each worker alone would have let its own 10 calls through)
    assert len(server.records) == 12


def test_merge_json_prints_the_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    batch = write_batch(tmp_path, 3)
    with FakeOpenAIServer(responder=same_reply) as server:
        for k in (1, 2):
            assert main(argv(batch, server, tmp_path / f"s{k}", "--shard", f"{k}/2")) == 0
    capsys.readouterr()
    folders = [str(tmp_path / "s1"), str(tmp_path / "s2")]
    assert main(["merge", *folders, "--out", str(tmp_path / "m"), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["items"] == 3 and printed["ok"] == 3
    assert [line["id"] for line in printed["lines"]] == ["d0", "d1", "d2"]


def test_ctrl_c_with_workers_exits_130_and_keeps_every_finished_item(tmp_path: Path) -> None:
    from tests.test_cli_funnel import HoldAfter, press_ctrl_c

    batch = write_batch(tmp_path, 4)
    out = tmp_path / "out"
    holder = HoldAfter(20)  # two items' ten calls each are answered; later calls are held
    with FakeOpenAIServer(responder=holder) as server:
        argv = ["batch", str(batch), "--out", str(out), "--concurrency", "2", "--workers", "2"]
        code, err = press_ctrl_c(argv, server, holder)
    assert code == 130, err
    assert len(err.splitlines()) == 1 and err.startswith("interrupted: ")
    lines = results(out)
    assert lines and all(line["status"] == "ok" and line["calls"] == 10 for line in lines)
    assert all((out / line["id"] / "result.json").is_file() for line in lines)


def test_workers_share_an_endpoints_rate_limit(tmp_path: Path) -> None:
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
        extra = ("--concurrency", "3", "--workers", "3", "--config", str(config), "--no-cache")
        main(argv(batch, judges, tmp_path / "o", *extra, "--deadline", "3"))
    # each of three workers alone would have sent all six of its item's debater calls
    assert len(limited.records) == 12


def test_progress_jsonl_with_workers_is_one_stream_of_every_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = write_batch(tmp_path, 3)
    with FakeOpenAIServer(responder=same_reply) as server:
        run = [a for a in argv(batch, server, tmp_path / "o") if a != "--quiet"]
        code = main([*run, "--workers", "2", "--concurrency", "2", "--progress", "jsonl"])
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
        code = main(argv(path, server, tmp_path / "o", "--workers", "2", "--concurrency", "2"))
        assert server.records == []  # not one call before the bad item was found
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and err.startswith("error: batch item b: ")
    assert "NO_SUCH_KEY_VAR" in err
