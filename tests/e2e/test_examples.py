"""Every example script runs (offline: on the placeholder model or a local test server)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support import ROOT
from tests.support.openai_server import FakeOpenAIServer

EXAMPLES = ROOT / "examples"


def run(tmp_path: Path, *argv: str) -> str:
    done = subprocess.run(
        [sys.executable, *argv], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_quickstart_runs_offline(tmp_path: Path) -> None:
    out = run(tmp_path, str(EXAMPLES / "quickstart.py"), "scripted")
    assert "written to" in out
    assert (tmp_path / "quickstart-out" / "result.json").exists()


def test_openai_compatible_example_against_a_local_server(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        out = run(
            tmp_path,
            str(EXAMPLES / "openai_compatible.py"),
            "--model",
            "m",
            "--base-url",
            server.base_url,
            "--api-key-env",
            "",
        )
        assert len(server.records) == 10
    assert "written to" in out


def test_meeting_example_judges_a_hand_written_transcript(tmp_path: Path) -> None:
    out = run(tmp_path, str(EXAMPLES / "judge_meeting.py"))
    assert "report:" in out and (tmp_path / "meeting-out" / "report.html").exists()


def test_council_example(tmp_path: Path) -> None:
    out = run(tmp_path, str(EXAMPLES / "council.py"))
    assert "reasoned" in out and ("winner" in out or "tied" in out)
