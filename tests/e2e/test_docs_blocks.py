"""Every runnable code block of the README and docs/ runs, so the documentation cannot drift.

A block fenced ```python, ```bash, ```sh or ```console is collected from README.md and every
Markdown page under docs/ and run in its own temporary folder, with a timeout:

- python blocks with this interpreter; shell blocks with ``bash -e -o pipefail``; a console
  block's ``$ `` lines as a shell script (the other lines are output, not checked).
- Models are this suite's OpenAI-compatible test server on 127.0.0.1: ``OPENAI_BASE_URL``
  points there (any endpoint without a ``base_url``, OpenAI's API included, is sent to it),
  ``OPENAI_API_KEY`` holds a dummy key, and every ``http(s)://…/v1`` base URL in a block is
  rewritten to the server's. The proxy variables point at a closed port on 127.0.0.1 with
  only loopback exempt, so a block that tried to reach any other host would fail, not leak.
- The folder has the checkout's ``examples/``, ``benchmarks/`` and ``tests/`` linked in, so
  a block written for the top of a checkout (``python examples/...``) runs as written.
- A block preceded by ``<!-- block: file NAME -->`` (a TOML config, say) is not run: it is
  written as NAME into the folder of every block of the same page, so a later block can
  use it.
- A block preceded by ``<!-- block: skip (REASON) -->`` is not run, and the reason is
  visible in the page's source. Output blocks (```text) and data (```toml, ```json, ...)
  are never run.

Written here rather than with pytest-examples or sybil: pytest-examples runs Python only
(and formats it with ruff/black), sybil's shell support is thin, and neither starts a model
server; this collector is about a hundred lines and knows the project's test server.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import ROOT
from tests.support.openai_server import FakeOpenAIServer

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RUNNABLE = {"python", "bash", "sh", "console"}
TIMEOUT = 180.0
"""Seconds a block may run: generous for two busy cores; the blocks take a few seconds."""
LINKED = ("examples", "benchmarks", "tests")
MARKER = re.compile(r"<!--\s*block:\s*(skip|file)\s*(.*?)\s*-->")
FENCE = re.compile(r"^(\s*)```([\w+-]*)\s*$")
BASE_URL = re.compile(r"https?://[A-Za-z0-9.\-]+(?::\d+)?/v1\b")
SHARED = ROOT.parent / "shared"
"""The data sets beside the checkout (``../shared/datasets``, as CI has them): a block naming
``../shared/`` reads them from there, and is skipped, saying so, where they are not."""
TOOLS = {"jq": r"\bjq\b", "curl": r"\bcurl\b", "chromium": r"--screenshots\b"}
"""Programs some shell blocks need that are not Python's, and how a block shows it needs one:
a block needing one this machine lacks is skipped, naming it (Debian: ``apt-get install jq
curl chromium``; ``make test`` installs chromium itself)."""
SERVICE_PORT = "8765"
"""The port the service blocks name (``debate serve``'s default); each run gets a free one."""


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    text: str
    marker: str
    """``skip``, ``file`` or ``""``."""
    argument: str
    """The skip's reason or the file's name."""

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page, each with the marker on the line just above its fence."""
    found: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, lang = opening.group(1), opening.group(2).lower()
        end = index + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        body = "\n".join(line.removeprefix(indent) for line in lines[index + 1 : end])
        above = lines[index - 1].strip() if index > 0 else ""
        marker = MARKER.fullmatch(above)
        kind, argument = (marker.group(1), marker.group(2).strip("() ")) if marker else ("", "")
        found.append(Block(page, index + 1, lang, body + "\n", kind, argument))
        index = end + 1
    return found


ALL = [block for page in PAGES for block in blocks(page)]
RUN = [block for block in ALL if block.lang in RUNNABLE and block.marker != "file"]


def test_markers_are_well_formed() -> None:
    """A skip names its reason and a file its name, and markers sit on blocks they can mean."""
    for block in ALL:
        if block.marker == "skip":
            assert block.argument, f"{block.id}: a skip needs its reason in parentheses"
            assert block.lang in RUNNABLE, f"{block.id}: only runnable blocks are skipped"
        if block.marker == "file":
            assert re.fullmatch(r"[\w.\-]+", block.argument), f"{block.id}: file NAME"


def test_the_readme_and_the_docs_have_blocks_that_run() -> None:
    """The collector finds what it should: a collector that found nothing would pass."""
    run = [block for block in RUN if block.marker != "skip"]
    assert any(block.page.name == "README.md" for block in run)
    assert len(run) >= 10
    skipped = [block for block in RUN if block.marker == "skip"]
    assert len(skipped) <= len(run) // 2, [block.id for block in skipped]


@pytest.fixture(scope="module")
def server() -> object:
    with FakeOpenAIServer() as fake:
        yield fake


def _free_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return str(probe.getsockname()[1])


def _rewrite(text: str, base_url: str, port: str) -> str:
    text = BASE_URL.sub(base_url, text)
    return text.replace(SERVICE_PORT, port)


def _environment(folder: Path, base_url: str) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("OPENAI_", "DEBATE_")) and "proxy" not in name.lower()
    }
    env.update(
        OPENAI_BASE_URL=base_url,
        OPENAI_API_KEY="sk-docs-blocks-dummy",
        HTTP_PROXY="http://127.0.0.1:9",
        HTTPS_PROXY="http://127.0.0.1:9",
        NO_PROXY="127.0.0.1,localhost",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(ROOT),
        DEBATE_STORE=str(folder / "store.sqlite"),
        XDG_DATA_HOME=str(folder / "data"),
        XDG_CACHE_HOME=str(folder / "cache"),
        NO_COLOR="1",
    )
    return env


def _command(block: Block, folder: Path, text: str) -> list[str]:
    if block.lang == "python":
        script = folder / "block.py"
        script.write_text(text, encoding="utf-8")
        return [sys.executable, str(script)]
    if block.lang == "console":
        text = "\n".join(line[2:] for line in text.splitlines() if line.startswith("$ "))
    return ["bash", "-e", "-o", "pipefail", "-c", text]


@pytest.mark.parametrize("block", RUN, ids=[block.id for block in RUN])
def test_block_runs(block: Block, server: FakeOpenAIServer, tmp_path: Path) -> None:
    if block.marker == "skip":
        pytest.skip(f"{block.id}: {block.argument}")
    missing = [
        tool
        for tool, needs in TOOLS.items()
        if re.search(needs, block.text) and shutil.which(tool) is None
    ]
    if missing:
        pytest.skip(f"{block.id}: needs {', '.join(missing)} on PATH")
    port = _free_port()
    for name in LINKED:
        (tmp_path / name).symlink_to(ROOT / name)
    for other in ALL:
        if other.page == block.page and other.marker == "file":
            (tmp_path / other.argument).write_text(
                _rewrite(other.text, server.base_url, port), encoding="utf-8"
            )
    text = _rewrite(block.text, server.base_url, port)
    if "../shared/" in text:
        if not SHARED.is_dir():
            pytest.skip(f"{block.id}: needs the data sets in {SHARED}")
        text = text.replace("../shared/", f"{SHARED}/")
    returncode, stdout, stderr = _run_in_own_group(
        _command(block, tmp_path, text), tmp_path, _environment(tmp_path, server.base_url)
    )
    assert returncode == 0, (
        f"{block.id} exited {returncode}\n--- block\n{text}\n"
        f"--- stdout\n{stdout[-3000:]}\n--- stderr\n{stderr[-3000:]}"
    )


def _run_in_own_group(
    command: list[str], cwd: Path, env: dict[str, str]
) -> tuple[int | None, str, str]:
    """Run a block in a process group of its own, and end the whole group afterwards.

    A block may start a server in the background (``debate serve … &``) and stop it on its
    last line; when a line before fails, or the timeout passes, that server would outlive
    the test (one did, holding its port). Killing the group ends it either way. Output goes
    to files, not pipes: a server left running keeps a pipe open, and reading to its end
    would wait for the server.
    """
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        try:
            returncode: int | None = process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            returncode = None
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        out.seek(0)
        err.seek(0)
        stderr = err.read()
        if returncode is None:
            stderr += f"\n(timed out after {TIMEOUT} s)"
        return returncode, out.read(), stderr
