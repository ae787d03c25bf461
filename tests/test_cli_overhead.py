"""What a command loads: the framework's own share of a ``debate run``.

The timings are in ``benchmarks/bench_throughput.py``; these tests hold the mechanism that
makes them: a command imports only what it uses (checked in a fresh interpreter through
``sys.modules``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from debate._cli.main import main

ROOT = Path(__file__).resolve().parents[1]
TOPIC = "Should we adopt four-day weeks?"

UNUSED_BY_RUN = (
    "scipy",
    "pandas",
    "fastapi",
    "uvicorn",
    "mcp",
    "llama_cpp",
    "debate.service",
    "debate.quality._decide",
    "debate.quality._audit",
    "debate.quality._benchmark",
    "debate.council",
)
"""Modules ``debate run`` never needs: the statistics of the quality commands (scipy), the
service, the embedded model (on a server), the council's machinery."""


def loaded(code: str, *names: str) -> list[str]:
    """Which of ``names`` (or their submodules) a fresh interpreter has loaded after ``code``."""
    probe = (
        f"{code}\nimport sys, json\n"
        f"names = {list(names)!r}\n"
        "hits = sorted({n for n in names for m in sys.modules if m == n or "
        "m.startswith(n + '.')})\n"
        "sys.stderr.write('LOADED ' + json.dumps(hits) + '\\n')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=False
    )
    line = next(x for x in out.stderr.splitlines() if x.startswith("LOADED "))
    return list(json.loads(line.removeprefix("LOADED ")))


def test_the_cli_imports_nothing_a_debate_does_not_use() -> None:
    assert loaded("import debate._cli.main", *UNUSED_BY_RUN, "openai") == []


def test_run_help_imports_nothing_a_debate_does_not_use() -> None:
    code = "from debate._cli.main import main\nmain(['run', '--help'])"
    assert loaded(code, *UNUSED_BY_RUN, "openai") == []


def test_a_run_on_a_server_loads_neither_scipy_nor_the_service(tmp_path: Path) -> None:
    # the scripted model stands in for the server: the openai SDK is the one import it skips
    code = (
        "from debate._cli.main import main\n"
        f"assert main(['run', {TOPIC!r}, '--model', 'scripted', '--seed', '3', "
        f"'--out', {str(tmp_path)!r}, '--quiet', '--no-store']) == 0"
    )
    assert loaded(code, *UNUSED_BY_RUN) == []
    assert (tmp_path / "result.json").is_file() and (tmp_path / "report.html").is_file()


def test_import_debate_is_lazy_and_every_public_name_still_resolves() -> None:
    assert loaded("import debate", "debate.api", "numpy", "pydantic", "jinja2") == []
    code = "import debate\nassert debate.run_debate is debate.api.run_debate\n"
    code += "assert debate.stats.fmt(None) == 'undefined'\nassert 'RunConfig' in dir(debate)"
    assert loaded(code, "scipy") == []


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"]])
def test_help_still_works(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 0
    assert "usage: debate" in capsys.readouterr().out
