"""What a fresh interpreter imports: the check behind every "imports only what it uses" test."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support import ROOT


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
    line = next((x for x in out.stderr.splitlines() if x.startswith("LOADED ")), None)
    assert line is not None, out.stderr
    return list(json.loads(line.removeprefix("LOADED ")))
