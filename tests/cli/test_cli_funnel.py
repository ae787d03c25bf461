"""One funnel for every command: exit 2 for bad input, 1 for a failed run, 130 for Ctrl-C.

Each failure is one line on stderr, never a traceback; run.json says how the run ended.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from debate._cli.main import build_parser, commands, dispatch, main
from debate.exceptions import (
    ConfigurationError,
    DeadlineExceeded,
    DebaterError,
    ModelOutputError,
    ProviderError,
)
from debate.models.test import fill_schema
from debate.records import DebateResult
from debate.storage._runinfo import RunInfo
from tests.support import ROOT
from tests.support.openai_server import FakeOpenAIServer, Reply

TOPIC = "Should we adopt the plan?"
EXAMPLE = ROOT / "examples" / "meeting_transcript.json"
NAMES = [name for module in commands() for name in [module.__name__.rsplit(".", 1)[-1]]]


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    """The single line a failed command writes on stderr (nothing on stdout)."""
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def run_info(out: Path) -> RunInfo:
    return RunInfo.model_validate_json((out / "run.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", NAMES)
def test_every_subcommand_is_registered_and_its_help_exits_0(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([name, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: debate {name} ")


def test_every_subcommand_dispatches_to_its_own_module() -> None:
    parser = build_parser()
    argv = {
        "run": ["run", TOPIC],
        "judge": ["judge", "t.json"],
        "council": ["council", "Q?", "--candidates", "c.jsonl"],
        "batch": ["batch", "b.jsonl"],
        "merge": ["merge", "o1", "o2", "--out", "o"],
        "calibrate": ["calibrate", "i.jsonl"],
        "report": ["report", "result.json"],
        "stability": ["stability", "result.json"],
        "agreement": ["agreement", "r.csv"],
        "schema": ["schema", "result"],
        "decide": ["decide", "j.csv"],
        "validity": ["validity", "j.csv"],
        "example": ["example", "pandalm"],
        "panels": ["panels", "embedded"],
        "serve": ["serve"],
        "mcp": ["mcp"],
        "warm": ["warm", "status"],
    }
    for module in commands():
        name = module.__name__.rsplit(".", 1)[-1]
        args = parser.parse_args(argv.get(name, [name]))
        assert args.func.__module__ == module.__name__, name


@pytest.mark.parametrize(
    ("error", "code", "label"),
    [
        (ConfigurationError("--rounds: 9 is out of range"), 2, "error"),
        (DebaterError("PRO could not argue"), 1, "failed"),
        (ProviderError("HTTP 503 from the server"), 1, "failed"),
        (ModelOutputError("not JSON", raw="{"), 1, "failed"),
        (DeadlineExceeded("the run passed its deadline"), 1, "failed"),
        (PermissionError(13, "Permission denied", "out/result.json"), 1, "failed"),
    ],
)
def test_the_funnel_maps_each_failure_to_one_line_and_an_exit_code(
    error: BaseException, code: int, label: str, capsys: pytest.CaptureFixture[str]
) -> None:
    def command(args: argparse.Namespace) -> int:
        raise error

    assert dispatch(argparse.Namespace(func=command)) == code
    line = one_line(capsys)
    assert line.startswith(f"{label}: ")
    assert str(error).split(":")[0].split("]")[-1].strip() in line


def test_a_message_with_line_breaks_stays_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    def command(args: argparse.Namespace) -> int:
        raise ProviderError("HTTP 500:\n<html>\nbad gateway\n</html>")

    assert dispatch(argparse.Namespace(func=command)) == 1
    assert one_line(capsys) == "failed: HTTP 500: <html> bad gateway </html>"


def test_the_funnel_turns_ctrl_c_into_130(capsys: pytest.CaptureFixture[str]) -> None:
    def command(args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    assert dispatch(argparse.Namespace(func=command)) == 130
    assert one_line(capsys) == "interrupted"  # no cache to mention
    assert dispatch(argparse.Namespace(func=command, no_cache=False)) == 130
    assert "kept in the response cache" in one_line(capsys)


def test_calibrate_missing_api_key_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    items = tmp_path / "items.jsonl"
    row = {"id": "1", "question": "Q?", "a": "yes", "b": "no", "labels": ["a", "a"]}
    items.write_text(json.dumps(row) + "\n", encoding="utf-8")
    argv = ["calibrate", str(items), "--model", "gpt-x", "--out", str(tmp_path / "out")]
    assert main([*argv, "--no-store", "--quiet"]) == 2
    line = one_line(capsys)
    assert line.startswith("error: ") and "OPENAI_API_KEY" in line
    assert not (tmp_path / "out" / "calibration.json").exists()


@pytest.mark.parametrize("fmt", ["debate", "pairwise"])
def test_calibrate_missing_file_is_one_line_exit_2(
    fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.jsonl"
    argv = ["calibrate", str(missing), "--format", fmt, "--model", "scripted", "--no-store"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    line = one_line(capsys)
    assert line.startswith(f"error: {fmt} file {missing}") and "cannot read it" in line
    assert not (tmp_path / "out").exists()  # nothing written for a command that never started


@pytest.mark.parametrize("fmt", ["debate", "pairwise"])
def test_calibrate_file_not_utf8_is_one_line_exit_2(
    fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "items.jsonl"
    bad.write_bytes(b"\xff\xfe{}\n")
    argv = ["calibrate", str(bad), "--format", fmt, "--model", "scripted", "--no-store"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    line = one_line(capsys)
    assert str(bad) in line and ("UTF-8" in line or "utf-8" in line)


@pytest.mark.parametrize("flag", ["--limit", "--concurrency"])
def test_calibrate_counts_below_one_are_usage_errors(
    flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["calibrate", str(tmp_path / "i.jsonl"), flag, "0"]) == 2
    assert f"argument {flag}: 0 is below 1" in one_line(capsys)


def test_batch_concurrency_is_checked_by_run_batch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = tmp_path / "b.jsonl"
    batch.write_text(json.dumps({"topic": TOPIC}) + "\n", encoding="utf-8")
    argv = ["batch", str(batch), "--model", "scripted", "--concurrency", "0", "--no-store"]
    assert main([*argv, "--out", str(tmp_path / "out"), "--no-cache"]) == 2
    assert "--concurrency: 0 must be at least 1" in one_line(capsys)


def test_agreement_file_not_utf8_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "r.csv"
    bad.write_bytes(b"1,2\n\xff,3\n")
    assert main(["agreement", str(bad)]) == 2
    line = one_line(capsys)
    assert line.startswith(f"error: ratings file {bad}: not UTF-8 text")


def test_agreement_folder_is_named_as_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["agreement", str(tmp_path)]) == 2
    assert f"{tmp_path} is a folder" in one_line(capsys)


class HoldAfter:
    """Answers ``n`` calls, then holds every later call until released (then drops it)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.answered = 0
        self.held = 0
        self.lock = threading.Lock()
        self.release = threading.Event()

    def __call__(self, body: dict[str, Any]) -> Reply:
        with self.lock:
            hold = self.answered >= self.n
            if hold:
                self.held += 1
            else:
                self.answered += 1
                number = self.answered
        if hold:
            self.release.wait(30)
            return Reply(status=599, body="dropped")
        schema = body["response_format"]["json_schema"]["schema"]
        return Reply(content=json.dumps(fill_schema(schema, random.Random(number))))


def press_ctrl_c(argv: list[str], server: FakeOpenAIServer, holder: HoldAfter) -> tuple[int, str]:
    """Run ``debate`` in a process, press Ctrl-C (SIGINT) once calls are held; code, stderr."""
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    # `python -m debate`, with Ctrl-C's default handler installed first: a test run started
    # in the background of a non-interactive shell ignores SIGINT, the child would inherit
    # that, and Python leaves an ignored SIGINT ignored (the press would do nothing).
    start = (
        "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "runpy.run_module('debate', run_name='__main__', alter_sys=True)"
    )
    command = [sys.executable, "-c", start, *argv, "--model", "m", "--base-url"]
    proc = subprocess.Popen(
        [*command, server.base_url, "--api-key-env", "", "--quiet", "--no-store"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (holder.answered == holder.n and holder.held >= 1):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    holder.release.set()
    return proc.returncode, err


def test_ctrl_c_during_a_run_exits_130_marks_run_json_and_keeps_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    holder = HoldAfter(2)  # the two openings are answered; the next calls are held
    with FakeOpenAIServer(responder=holder) as server:
        code, err = press_ctrl_c(["run", TOPIC, "--out", str(out)], server, holder)
        assert code == 130, err
        assert err.splitlines() == [
            "interrupted: completed model calls are kept in the response cache; run the same "
            "command again to continue"
        ]
        info = run_info(out)
        assert info.status == "interrupted" and info.finished is not None
        assert info.cache == str(out / "cache.sqlite")
        assert not (out / "result.json").exists()
        with sqlite3.connect(out / "cache.sqlite") as db:
            (kept,) = db.execute("SELECT COUNT(*) FROM responses").fetchone()
        assert kept == 2  # the completed calls survive the interruption
        # the next attempt resumes: same seed, and the two cached calls are not sent again
        holder.n = 1000
        argv = ["run", TOPIC, "--model", "m", "--base-url", server.base_url, "--quiet"]
        argv += ["--api-key-env", ""]
        assert main([*argv, "--out", str(out), "--no-store"]) == 0
        assert holder.answered == 2 + (10 - 2)
    capsys.readouterr()
    again = run_info(out)
    assert again.status == "finished" and again.seed == info.seed
    assert again.seed_source == "resumed" and again.cache_hits == 2
    DebateResult.model_validate_json((out / "result.json").read_text(encoding="utf-8"))


def test_ctrl_c_in_a_council_marks_its_run_json(tmp_path: Path) -> None:
    candidates = tmp_path / "c.jsonl"
    rows = [{"id": "a", "text": "Yes, because X."}, {"id": "b", "text": "No, because Y."}]
    candidates.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out"
    holder = HoldAfter(1)
    with FakeOpenAIServer(responder=holder) as server:
        argv = ["council", "Which?", "--candidates", str(candidates), "--out", str(out)]
        code, err = press_ctrl_c(argv, server, holder)
    assert code == 130 and len(err.splitlines()) == 1 and err.startswith("interrupted: ")
    assert run_info(out).status == "interrupted"


def test_a_failed_run_exits_1_and_says_so_in_run_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    with FakeOpenAIServer(responder=lambda body: Reply(content="not json")) as server:
        argv = ["run", TOPIC, "--model", "m", "--base-url", server.base_url, "--quiet"]
        argv += ["--api-key-env", ""]
        code = main([*argv, "--out", str(out), "--no-store", "--max-retries", "0"])
    line = one_line(capsys)
    assert code == 1 and line.startswith("failed: ")
    info = run_info(out)
    assert info.status == "failed" and info.error is not None and info.error in line


@pytest.mark.parametrize("command", [["run", TOPIC], ["judge", str(EXAMPLE)]])
def test_an_out_folder_that_cannot_be_made_is_bad_input(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    argv = [*command, "--model", "scripted", "--out", str(blocker / "sub"), "--quiet"]
    for cache in (["--no-cache"], []):
        assert main([*argv, "--no-store", *cache]) == 2
        assert one_line(capsys).startswith(f"error: --out {blocker / 'sub'}: cannot create")


def test_ctrl_c_in_a_calibration_exits_130_and_keeps_the_completed_calls(tmp_path: Path) -> None:
    items = tmp_path / "items.jsonl"
    rows = [
        {"id": str(n), "question": f"Q{n}?", "a": "yes", "b": "no", "labels": ["a"]}
        for n in range(3)
    ]
    items.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out"
    holder = HoldAfter(8)
    with FakeOpenAIServer(responder=holder) as server:
        argv = ["calibrate", str(items), "--concurrency", "1", "--out", str(out)]
        code, err = press_ctrl_c(argv, server, holder)
    assert code == 130, err
    assert len(err.splitlines()) == 1 and err.startswith("interrupted: ")
    with sqlite3.connect(out / "cache.sqlite") as db:
        (kept,) = db.execute("SELECT COUNT(*) FROM responses").fetchone()
    # the valid replies among the eight answered stay recorded for the re-run (an invalid
    # reply is re-asked, never cached)
    assert 1 <= kept <= holder.answered
    assert not (out / "calibration.json").exists()


@pytest.mark.parametrize("command", [["run", TOPIC], ["judge", str(EXAMPLE)]])
def test_deliberate_with_swap_is_one_line_exit_2(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*command, "--model", "scripted", "--deliberate", "--swap", "--no-store", "--quiet"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    line = one_line(capsys)
    assert line.startswith("error: ") and "deliberation.rounds" in line and "--swap" in line
    assert not (tmp_path / "out" / "result.json").exists()
