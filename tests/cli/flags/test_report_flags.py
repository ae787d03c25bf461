"""``debate report``'s flags."""

from __future__ import annotations

import pytest

from debate._cli.main import main
from tests.cli.flags.harness import (
    Harness,
)


def test_report_result_and_out(h: Harness, capsys: pytest.CaptureFixture[str]) -> None:
    run = h.run("judge")
    assert main(["report", str(run.folder / "result.json")]) == 0
    assert capsys.readouterr().out.split() == [
        str(run.folder / "report.md"),
        str(run.folder / "report.html"),
    ]
    elsewhere = h.tmp / "reports"
    assert main(["report", str(run.folder / "result.json"), "--out", str(elsewhere)]) == 0
    capsys.readouterr()
    assert (elsewhere / "report.md").is_file() and (elsewhere / "report.html").is_file()
