"""Every example script runs (offline: on the placeholder model)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_quickstart_runs_offline(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "quickstart.py"), "scripted"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "written to" in done.stdout
    assert (tmp_path / "quickstart-out" / "result.json").exists()
