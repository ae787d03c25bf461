"""Batch runs: the limiter's window, resume without re-sending, isolated failures."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from debate._cli.main import main
from debate.models.test import fill_schema
from debate.runtime import RateLimiter
from tests.support import ROOT
from tests.support.openai_server import FakeOpenAIServer, Reply, empty_first_try, is_reask


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += max(seconds, 0.0)
        await asyncio.sleep(0)


def test_limiter_never_exceeds_rpm_in_any_window() -> None:
    clock = FakeClock()
    limiter = RateLimiter(rpm=10, clock=clock, sleep=clock.sleep)
    starts: list[float] = []

    async def worker() -> None:
        for _ in range(5):
            await limiter.acquire()
            starts.append(clock())
            clock.now += 0.5  # the call takes half a second

    async def main_() -> None:
        await asyncio.gather(*(worker() for _ in range(7)))

    asyncio.run(main_())
    assert len(starts) == 35
    for t in starts:
        assert sum(1 for s in starts if t <= s < t + 60) <= 10
    assert max(starts) >= 180  # 35 requests at 10/min need at least three more windows


def test_limiter_caps_tokens_per_minute() -> None:
    clock = FakeClock()
    limiter = RateLimiter(tpm=1000, clock=clock, sleep=clock.sleep)

    async def main_() -> list[float]:
        times = []
        for _ in range(5):
            await limiter.acquire(400)
            times.append(clock())
        return times

    times = asyncio.run(main_())
    for t in times:
        assert sum(400 for s in times if t <= s < t + 60) <= 1000


def test_bad_limits_are_refused() -> None:
    from debate.exceptions import ConfigurationError

    with pytest.raises(ConfigurationError, match="--rpm"):
        RateLimiter(rpm=0)


def _batch(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "batch.jsonl"
    lines = [
        json.dumps({"id": f"d{i}", "topic": f"Should team {i} adopt the plan?"}) for i in range(n)
    ]
    transcript = json.loads((ROOT / "examples" / "meeting_transcript.json").read_text())
    lines.append(json.dumps({"id": "meeting", "transcript": transcript}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_batch_resume_skips_finished_items_and_isolates_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[str] = []

    def responder(body: dict[str, Any]) -> Reply:
        text = json.dumps(body["messages"])
        seen.append(text)
        if "team 2 " in text and fail["on"]:
            return Reply(status=500)
        schema = body["response_format"]["json_schema"]["schema"]
        import random

        return Reply(content=json.dumps(fill_schema(schema, random.Random(len(text)))))

    fail = {"on": True}
    batch = _batch(tmp_path, 4)
    out = tmp_path / "out"
    with FakeOpenAIServer(responder=responder) as server:
        argv = [
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
            "--concurrency",
            "3",
            "--quiet",
            "--no-cache",
        ]
        assert main(argv + ["--max-retries", "0"]) == 1  # an item failed: a CI job must see it
        stdout, _ = capsys.readouterr()
        results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
        assert [r["id"] for r in results] == ["d0", "d1", "d2", "d3", "meeting"]
        assert [r["status"] for r in results] == ["ok", "ok", "failed", "ok", "ok"]
        assert "DebaterError" in results[2]["error"]
        assert "4 of 5 items ok, 1 failed" in stdout
        assert not (out / "d2" / "result.json").exists()
        first_pass = len(seen)
        # resume: only the failed item runs again
        fail["on"] = False
        seen.clear()
        assert main(argv) == 0
        capsys.readouterr()
        assert seen and all("team 2 " in s for s in seen)
        assert len(seen) == 10
        results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
        assert all(r["status"] == "ok" for r in results)
    assert first_pass > 10


def test_batch_file_errors_name_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "b.jsonl"
    path.write_text('{"topic": "ok?"}\n{"topic": "x", "transcript": {}}\n')
    assert main(["batch", str(path), "--model", "scripted", "--quiet"]) == 2
    assert "line 2" in capsys.readouterr().err


def test_prices_give_a_cost(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text("[models.scripted]\nprompt = 1.0\ncompletion = 2.0\n")
    path = tmp_path / "b.jsonl"
    path.write_text('{"topic": "Should we?"}\n')
    assert (
        main(
            [
                "batch",
                str(path),
                "--model",
                "scripted",
                "--quiet",
                "--prices",
                str(prices),
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "cost $" in out
    result = json.loads((tmp_path / "o" / "item-1" / "result.json").read_text())
    usage = result["usage"]
    expected = (usage["prompt_tokens"] * 1.0 + usage["completion_tokens"] * 2.0) / 1e6
    assert usage["cost_usd"] == pytest.approx(expected, abs=1e-6)
    assert len(usage["per_call"]) == 10


def test_batch_weights_votes_by_track_records_and_records_its_runs(tmp_path: Path) -> None:
    from debate.judgments import TrackRecords
    from debate.panel import identity
    from debate.storage import RunStore

    store = tmp_path / "store.sqlite"
    key = identity("risk", "scripted")
    TrackRecords(store).add([(key, f"i{n}", "d", "a", "b") for n in range(30)])  # all wrong
    path = tmp_path / "b.jsonl"
    path.write_text('{"topic": "Should we?"}\n{"topic": "Should they?"}\n')
    argv = ["batch", str(path), "--model", "scripted", "--quiet", "--out", str(tmp_path / "o")]
    assert main([*argv, "--store", str(store)]) == 0
    weights = json.loads((tmp_path / "o" / "item-1" / "result.json").read_text())["vote"][
        "judge_weights"
    ]
    # 0.7 x 0.25 domain weight + 0.3 x shrunk accuracy (0 + 10) / (30 + 10)
    assert weights["risk"] == pytest.approx(0.7 * 0.25 + 0.3 * 10 / 40)
    assert weights["technical"] == pytest.approx(0.7 * 0.25 + 0.3)
    assert RunStore(store).count_runs() == 2


def test_ctrl_c_in_a_batch_exits_130_and_keeps_every_finished_item(tmp_path: Path) -> None:
    from tests.cli.test_cli_funnel import HoldAfter, press_ctrl_c

    batch = _batch(tmp_path, 3)  # d0, d1, d2 and a transcript; one item at a time
    out = tmp_path / "out"
    holder = HoldAfter(10)  # d0's ten calls are answered; d1's first call is held
    with FakeOpenAIServer(responder=holder) as server:
        argv = ["batch", str(batch), "--out", str(out), "--concurrency", "1"]
        code, err = press_ctrl_c(argv, server, holder)
    assert code == 130, err
    assert len(err.splitlines()) == 1 and err.startswith("interrupted: ")
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [(line["id"], line["status"]) for line in lines] == [("d0", "ok")]
    assert lines[0]["calls"] == 10
    assert (out / "d0" / "result.json").is_file()
    assert not (out / "d1" / "result.json").exists()


@pytest.mark.parametrize("item_id", ["..", ".", "../escape", "a/b", ".hidden", "x\n", ""])
def test_an_item_id_that_could_leave_out_is_refused(
    item_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    path = work / "b.jsonl"
    path.write_text(json.dumps({"id": item_id, "topic": "Should we?"}) + "\n")
    argv = ["batch", str(path), "--model", "scripted", "--quiet", "--no-store"]
    assert main([*argv, "--out", str(work / "out")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "line 1" in err and "id" in err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["b.jsonl", "work"]


def test_every_path_stays_inside_out_whatever_the_id(tmp_path: Path) -> None:
    from debate.batch import item_folder
    from debate.exceptions import ConfigurationError

    assert item_folder(tmp_path, "d0") == tmp_path / "d0"
    for bad in ("..", ".", "../x", "a/../../b"):
        with pytest.raises(ConfigurationError, match="outside --out"):
            item_folder(tmp_path, bad)


def test_a_bad_item_config_is_refused_before_any_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "b.jsonl"
    rows = [{"id": "a", "topic": "Should we?"}, {"id": "b", "topic": "Or?", "config": {}}]
    rows.append({"id": "c", "topic": "Then?", "config": {"arguments": 99}})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    calls: list[str] = []
    with FakeOpenAIServer(responder=lambda body: calls.append("x") or Reply(status=500)) as s:
        argv = ["batch", str(path), "--model", "m", "--base-url", s.base_url, "--quiet"]
        argv += ["--api-key-env", ""]
        assert main([*argv, "--no-store", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: batch item c config.arguments: 99 is out of range; use 1 to 10"
    assert calls == []  # not one call before the bad item was found


@pytest.mark.parametrize(("flag", "value"), [("--rpm", "0"), ("--tpm", "0"), ("--rpm", "-1")])
def test_a_zero_or_negative_rate_limit_is_refused_not_ignored(
    flag: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "b.jsonl"
    path.write_text('{"topic": "Should we?"}\n')
    argv = ["batch", str(path), "--model", "scripted", "--quiet", "--no-store", flag, value]
    assert main([*argv, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {flag}: {value} is out of range") and "no limit" in err
    assert not (tmp_path / "o").exists()


def test_a_batch_whose_every_call_needed_a_re_ask_is_replayed_and_sends_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 28 item 1 in a batch: every call's first try is empty, so every call needs a
    re-ask. The batch again (a new ``--out``, the same ``--cache``, so every item runs again)
    sends 0 requests and gives every item the same result."""
    batch = _batch(tmp_path, 2)
    cache = tmp_path / "cache.sqlite"
    with FakeOpenAIServer(responder=empty_first_try) as server:

        def run(out: Path) -> int:
            argv = ["batch", str(batch), "--model", "m", "--base-url", server.base_url,
                    "--api-key-env", "", "--out", str(out), "--cache", str(cache),
                    "--seed", "3", "--concurrency", "3", "--quiet"]  # fmt: skip
            before = len(server.records)
            assert main(argv) == 0
            return len(server.records) - before

        first, second = run(tmp_path / "a"), run(tmp_path / "b")
    capsys.readouterr()
    reasks = sum(is_reask(r.body) for r in server.records)
    assert first > 0 and reasks * 2 == first  # every call took two requests
    assert second == 0
    for item in ("d0", "d1", "meeting"):
        a = json.loads((tmp_path / "a" / item / "result.json").read_text())
        b = json.loads((tmp_path / "b" / item / "result.json").read_text())
        assert a == b, item


@pytest.mark.parametrize("workers", ["1", "2"])
def test_an_item_whose_text_is_not_unicode_fails_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], workers: str, request: pytest.FixtureRequest
) -> None:
    """A lone surrogate in one item's topic or transcript fails that item; the others run."""
    if workers != "1":
        request.getfixturevalue("ray_cluster")  # --workers 2: on Ray
    from tests.support.helpers import transcript

    bad = transcript().model_dump()
    bad["arguments"][0]["claim"] = "a claim \udce9 cut from bytes"
    batch = tmp_path / "b.jsonl"
    rows = [
        {"id": "good", "topic": "Should we adopt a four-day week?"},
        {"id": "topic", "topic": "\ud800"},
        {"id": "claim", "transcript": bad},
    ]
    batch.write_text("".join(json.dumps(row) + "\n" for row in rows))  # \ud800 escaped
    out = tmp_path / "out"
    argv = ["batch", str(batch), "--model", "scripted", "--quiet", "--no-store"]
    assert main([*argv, "--out", str(out), "--workers", workers, "--concurrency", "2"]) == 1
    capsys.readouterr()
    summary = [json.loads(line) for line in (out / "summary.jsonl").read_text().splitlines()]
    assert [(s["id"], s["status"]) for s in summary] == [
        ("good", "ok"),
        ("topic", "failed"),
        ("claim", "failed"),
    ]
    assert (out / "good" / "result.json").is_file()
    assert summary[1]["error"].startswith("bad input: topic: not Unicode text")
    assert "arguments.0.claim: not Unicode text" in summary[2]["error"]
    assert "\\udce9" in summary[2]["error"]


def test_an_item_being_written_when_the_batch_is_cancelled_is_in_results_jsonl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # its files are written by a worker thread, which the cancellation (Ctrl-C) cannot stop
    import threading

    import debate.batch as batch
    from debate.records import RunConfig

    writing, release = threading.Event(), threading.Event()
    write = batch.write_item_files

    def held(result: Any, folder: Path) -> None:
        writing.set()
        release.wait(30)
        write(result, folder)

    monkeypatch.setattr(batch, "write_item_files", held)
    path = tmp_path / "b.jsonl"
    path.write_text(json.dumps({"id": "a", "topic": "Should we?"}) + "\n")
    out = tmp_path / "out"

    async def cancelled() -> None:
        work = batch.run_batch(
            batch.load_batch(path), config=RunConfig(model="scripted"), out_dir=out
        )
        task = asyncio.ensure_future(work)
        await asyncio.to_thread(writing.wait, 30)
        task.cancel()
        await asyncio.sleep(0.05)  # the cancellation reaches the item while its thread writes
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled())
    assert (out / "a" / "result.json").is_file()
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [(line["id"], line["status"]) for line in lines] == [("a", "ok")]
