"""``debate batch --engine processes`` gives the batch one process gives, over forked copies.

Each batch runs as ``python -m debate`` in its own process, as a user runs it: the engine
forks, and this test process runs the OpenAI-compatible test servers (on 127.0.0.1) in
threads, which a fork must not copy. The servers' replies are a function of the request
alone, so the same item gets the same result whichever process runs it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from debate._cli.main import main
from debate.batch import load_batch, run_batch_processes
from debate.exceptions import ConfigurationError
from debate.records import RunConfig
from debate.storage import RunStore
from tests.cli.test_cli_funnel import HoldAfter
from tests.support import ROOT
from tests.support.batch_helpers import argv, results, same_reply, write_batch
from tests.support.helpers import processes_with
from tests.support.openai_server import FakeOpenAIServer, Reply

PROCESSES = ("--engine", "processes", "--workers", "2")


def debate(args: list[str]) -> subprocess.CompletedProcess[str]:
    """``python -m debate ARGS`` in its own process, without an OpenAI key."""
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    command = [sys.executable, "-m", "debate", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=ROOT, env=env)


def copies_of(out: Path) -> list[int]:
    """Processes still running a batch into ``out`` (forked copies share its command line)."""
    return processes_with(str(out))


def test_processes_give_the_lines_and_results_of_one_process(tmp_path: Path) -> None:
    batch = write_batch(tmp_path, 24)
    common = ("--concurrency", "8", "--no-cache")
    with FakeOpenAIServer(responder=same_reply) as server:
        one = debate(argv(batch, server, tmp_path / "one", *common))
        calls_one = len(server.records)
        many = debate(argv(batch, server, tmp_path / "many", *common, *PROCESSES))
        calls_many = len(server.records) - calls_one
    assert one.returncode == 0 and many.returncode == 0, many.stderr
    assert calls_many == calls_one == 10 * 24  # every item once, none twice
    lines = results(tmp_path / "many")
    assert [r["id"] for r in lines] == [f"d{i}" for i in range(24)]
    assert lines == results(tmp_path / "one")  # decisions, margins, agreement, calls, tokens
    assert all(r["status"] == "ok" for r in lines)
    summary = (tmp_path / "many" / "summary.jsonl").read_text()
    assert summary == (tmp_path / "one" / "summary.jsonl").read_text()
    for i in (0, 1, 13, 23):  # items of either process
        a = json.loads((tmp_path / "one" / f"d{i}" / "result.json").read_text())
        b = json.loads((tmp_path / "many" / f"d{i}" / "result.json").read_text())
        assert a["decision"] == b["decision"] and a["usage"] == b["usage"]
        assert (tmp_path / "many" / f"d{i}" / "report.html").is_file()
    assert copies_of(tmp_path / "many") == []


def test_the_store_records_each_item_once_and_a_rerun_calls_nothing(tmp_path: Path) -> None:
    batch = write_batch(tmp_path, 6)
    store = tmp_path / "runs.sqlite"
    with FakeOpenAIServer(responder=same_reply) as server:
        run = [a for a in argv(batch, server, tmp_path / "o", *PROCESSES) if a != "--no-store"]
        first = debate([*run, "--store", str(store)])
        calls = len(server.records)
        again = debate([*run, "--store", str(store)])
        assert len(server.records) == calls == 60  # the re-run skipped every item
    assert first.returncode == 0 and again.returncode == 0, first.stderr
    assert RunStore(store).count_runs() == 6  # recorded by the first process alone, once each
    assert [r["status"] for r in results(tmp_path / "o")] == ["ok"] * 6


def test_a_killed_process_fails_only_its_unfinished_items_and_a_rerun_runs_them(
    tmp_path: Path,
) -> None:
    batch = write_batch(tmp_path, 12)
    out = tmp_path / "o"
    killed: list[int] = []
    answered = [0]
    lock = threading.Lock()
    command: dict[str, Any] = {}

    def kill_the_copy_midway(body: dict[str, Any]) -> Reply:
        with lock:
            answered[0] += 1
            if answered[0] == 45 and not killed:  # some items done, others in flight
                parent = command["process"].pid
                children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
                killed.extend(int(pid) for pid in children)
                for pid in killed:
                    os.kill(pid, signal.SIGKILL)
        return same_reply(body)

    with FakeOpenAIServer(responder=kill_the_copy_midway) as server:
        args = argv(batch, server, out, "--concurrency", "4", "--no-cache", *PROCESSES)
        env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
        command["process"] = proc = subprocess.Popen(
            [sys.executable, "-m", "debate", *args],
            cwd=ROOT,
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        _, err = proc.communicate(timeout=240)
    assert len(killed) == 1, err  # the one copy (--workers 2: this process and one more)
    assert proc.returncode == 1  # items failed
    lines = results(out)
    assert [r["id"] for r in lines] == [f"d{i}" for i in range(12)]  # none lost
    failed = [r for r in lines if r["status"] == "failed"]
    assert failed and len(failed) < 12
    for line in failed:
        assert line["error"].startswith("WorkerStopped: its process ended (signal 9)")
        assert not (out / line["id"] / "result.json").exists()
    done = [r for r in lines if r["status"] == "ok"]
    with FakeOpenAIServer(responder=same_reply) as server:
        rerun = debate(argv(batch, server, out, "--concurrency", "4", "--no-cache", *PROCESSES))
        sent = [json.dumps(r.body["messages"]) for r in server.records]
    assert rerun.returncode == 0, rerun.stderr
    assert [r["status"] for r in results(out)] == ["ok"] * 12
    assert len(sent) == 10 * len(failed)  # only the failed items ran again (no cache here)
    for line in done:
        assert not any(f"team {line['id'][1:]} " in text for text in sent)


def test_ctrl_c_stops_every_process_and_keeps_the_finished_items(tmp_path: Path) -> None:
    batch = write_batch(tmp_path, 6)
    out = tmp_path / "out"
    holder = HoldAfter(20)  # twenty calls are answered (an item is ten); later calls are held
    with FakeOpenAIServer(responder=holder) as server:
        args = argv(batch, server, out, "--concurrency", "2", *PROCESSES)
        # Ctrl-C's default handler installed first: a test run in the background of a
        # non-interactive shell ignores SIGINT, and the command would inherit that
        start = (
            "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "runpy.run_module('debate', run_name='__main__', alter_sys=True)"
        )
        env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
        proc = subprocess.Popen(
            [sys.executable, "-c", start, *args],
            cwd=ROOT,
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while not (holder.held >= 1 and list(out.glob("d*/result.json"))):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)  # its copy ignores SIGINT: the command stops it
        _, err = proc.communicate(timeout=60)
        holder.release.set()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("interrupted: ")
    first = results(out)
    assert first and all(line["status"] == "ok" and line["calls"] == 10 for line in first)
    assert {p.parent.name for p in out.glob("d*/result.json")} == {line["id"] for line in first}
    assert copies_of(out) == []  # the copy ended before the command did


def test_progress_jsonl_is_one_stream_of_every_processs_calls(tmp_path: Path) -> None:
    batch = write_batch(tmp_path, 4)
    with FakeOpenAIServer(responder=same_reply) as server:
        run = [a for a in argv(batch, server, tmp_path / "o") if a != "--quiet"]
        done = debate([*run, *PROCESSES, "--progress", "jsonl", "--no-cache"])
        calls = len(server.records)
    assert done.returncode == 0, done.stderr
    stream = [json.loads(line) for line in done.stderr.splitlines()]
    assert stream[0]["type"] == "plan" and stream[0]["total"] == calls == 40
    assert len([e for e in stream if e["type"] == "start"]) == calls
    assert len([e for e in stream if e["type"] == "finish"]) == calls
    assert sorted(e["id"] for e in stream if e["type"] == "item_finish") == ["d0", "d1", "d2", "d3"]


def test_the_progress_line_counts_every_processs_items(tmp_path: Path) -> None:
    batch = write_batch(tmp_path, 4)
    with FakeOpenAIServer(responder=same_reply, latency=0.05) as server:
        run = [a for a in argv(batch, server, tmp_path / "o") if a != "--quiet"]
        done = debate([*run, *PROCESSES, "--concurrency", "2", "--no-cache"])
    assert done.returncode == 0, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    # the copy's two items are counted by the line the first process shows, and its running
    # count comes back to 0 (each item's +1 and -1 reached the first process)
    assert last.startswith("[batch] 4/4 finished (4 ok, 0 failed, 0 skipped), 0 running | ")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--rpm", "60"), "error: --engine processes: --rpm/--tpm and --max-cost/--max-tokens"),
        (("--max-tokens", "9000"), "error: --engine processes: --rpm/--tpm and --max-cost"),
        (("--config", "LIMITED"), "error: --engine processes: endpoint a has rpm/tpm"),
        (("EMBEDDED",), "error: --engine processes: the embedded model runs in"),
    ],
)
def test_what_processes_cannot_share_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], message: str
) -> None:
    batch = write_batch(tmp_path, 3)
    limited = tmp_path / "limited.toml"
    limited.write_text(
        'pro_endpoint = "a"\n[endpoints.a]\nbase_url = "http://127.0.0.1:9/v1"\n'
        'api_key_env = ""\nrpm = 12\n'
    )
    extra = tuple(str(limited) if e == "LIMITED" else e for e in extra)
    with FakeOpenAIServer(responder=same_reply) as server:
        run = [*argv(batch, server, tmp_path / "o", *PROCESSES), *extra]
        if extra == ("EMBEDDED",):  # no server: the model in this process
            run = ["batch", str(batch), "--model", "local", "--out", str(tmp_path / "o")]
            run += [*PROCESSES, "--no-store"]
        assert main(run) == 2
        assert server.records == []
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(message), err
    assert not (tmp_path / "o" / "results.jsonl").exists()


def test_a_process_running_other_threads_is_not_forked(tmp_path: Path) -> None:
    batch = write_batch(tmp_path, 2)
    with FakeOpenAIServer(responder=same_reply) as server:  # its thread is running here
        config = RunConfig(model="m", base_url=server.base_url, api_key_env="")
        with pytest.raises(ConfigurationError, match="threads and a fork copies only"):
            run_batch_processes(load_batch(batch), config=config, out_dir=tmp_path / "o", workers=2)
        assert server.records == []


def test_a_call_from_inside_an_event_loop_is_refused_before_any_fork(tmp_path: Path) -> None:
    import asyncio

    batch = write_batch(tmp_path, 2)
    config = RunConfig(model="scripted")

    async def inside() -> None:
        run_batch_processes(load_batch(batch), config=config, out_dir=tmp_path / "o", workers=2)

    with pytest.raises(ConfigurationError, match="cannot run inside one"):
        asyncio.run(inside())
    assert not (tmp_path / "o").exists()


def test_bad_input_found_while_items_run_stops_every_process_in_one_line(tmp_path: Path) -> None:
    batch = write_batch(tmp_path, 6)
    templates = tmp_path / "templates"
    templates.mkdir()
    # valid Jinja, so it passes the check before any call; it fails at the judges' step
    (templates / "judge_system.md.jinja").write_text("You judge {{ no_such_variable }}.\n")
    out = tmp_path / "o"
    with FakeOpenAIServer(responder=same_reply) as server:
        args = argv(batch, server, out, "--concurrency", "4", "--no-cache", *PROCESSES)
        done = debate([*args, "--templates", str(templates)])
        judged = [r for r in server.records if "no_such_variable" in json.dumps(r.body)]
    assert done.returncode == 2, done.stderr
    err = done.stderr.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert "no_such_variable" in err
    assert judged == []  # no judge's prompt was sent
    assert results(out) == []  # no item finished; the batch's files are written all the same
    assert copies_of(out) == []
