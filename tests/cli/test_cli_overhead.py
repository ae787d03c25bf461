"""What a command loads and how it ends: the framework's own share of a ``debate run``.

The timings are in ``benchmarks/bench_throughput.py``; these tests hold the mechanisms that
make them: a command imports only what it uses (checked in a fresh interpreter through
``sys.modules``), the response cache is closed when the command ends, and the process that
exits without collecting its objects has written everything first.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from debate._cli import outputs
from debate._cli.main import main
from debate._version import __version__
from debate.models import TokenUsage
from debate.storage import ResponseCache
from tests.support import ROOT
from tests.support.imports import loaded
from tests.support.openai_server import FakeOpenAIServer

TOPIC = "Should we adopt four-day weeks?"

UNUSED_BY_RUN = (
    "scipy",
    "pandas",
    "fastapi",
    "uvicorn",
    "mcp",
    "llama_cpp",
    "debate.service",
    "debate.judgments._decide",
    "debate.quality._audit",
    "debate.quality._benchmark",
    "debate.council",
    "debate.judgments._tables",
)
"""Modules ``debate run`` never needs: the statistics of the quality commands (scipy), the
service, the embedded model (on a server), the council's machinery, the judgments tables."""


def test_the_cli_imports_nothing_a_debate_does_not_use() -> None:
    assert loaded("import debate._cli.main", *UNUSED_BY_RUN, "openai") == []


def test_run_help_imports_nothing_a_debate_does_not_use() -> None:
    code = "from debate._cli.main import main\nmain(['run', '--help'])"
    assert loaded(code, *UNUSED_BY_RUN, "openai") == []


def test_a_run_imports_numpy_only_after_its_first_model_call(tmp_path: Path) -> None:
    # the judges' decision and the report need numpy; the first request must not wait for it
    code = (
        "import sys\nfrom debate.models.test import TestModel\n"
        "first = []\ncomplete = TestModel.complete\n"
        "async def probe(self, *args, **kwargs):\n"
        "    first.append(first or 'numpy' in sys.modules)\n"
        "    return await complete(self, *args, **kwargs)\n"
        "TestModel.complete = probe\n"
        "from debate._cli.main import main\n"
        f"assert main(['run', {TOPIC!r}, '--model', 'scripted', '--seed', '3', "
        f"'--out', {str(tmp_path)!r}, '--quiet', '--no-store']) == 0\n"
    )
    # numpy is loaded at the end (by the judging), not yet at the first call
    assert loaded(code + "assert first[0] is False, first", "numpy") == ["numpy"]
    assert (tmp_path / "report.html").is_file()


def test_a_panel_s_configuration_error_is_reported_before_any_model_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the panel is built (and its judges' roles checked) before the debaters' first call
    config = tmp_path / "panel.toml"
    config.write_text(
        '[[judges]]\nrole = "technical"\n[[judges]]\nrole = "wizard"\n'
        "weights = { logic = 0.25, evidence = 0.25, responsiveness = 0.25, honesty = 0.25 }\n"
    )
    with FakeOpenAIServer() as server:
        argv = ["run", TOPIC, "--base-url", server.base_url, "--model", "m"]
        argv += ["--api-key-env", "", "--config", str(config), "--out", str(tmp_path / "o")]
        code = main([*argv, "--no-store", "--progress", "jsonl"])
    events = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert code == 2 and server.records == []
    assert [e["type"] for e in events] == ["plan", "error"]
    assert "unknown judge role 'wizard'" in events[-1]["message"]


def test_a_batch_in_one_process_never_imports_ray(tmp_path: Path) -> None:
    # Ray is the optional engine of batches: neither the package nor a plain batch loads it
    assert loaded("import debate", "ray") == []
    batch = tmp_path / "b.jsonl"
    batch.write_text(json.dumps({"topic": TOPIC}) + "\n")
    code = (
        "from debate._cli.main import main\n"
        f"assert main(['batch', {str(batch)!r}, '--model', 'scripted', "
        f"'--out', {str(tmp_path / 'o')!r}, '--quiet', '--no-store']) == 0"
    )
    assert loaded(code, "ray", *UNUSED_BY_RUN) == []
    assert (tmp_path / "o" / "item-1" / "result.json").is_file()


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


def test_a_command_closes_the_response_cache_it_opened(tmp_path: Path) -> None:
    code = main([*("run", TOPIC, "--model", "scripted", "--seed", "3"), "--out", str(tmp_path)])
    assert code == 0
    assert outputs.OPENED_CACHES == []
    # the write-ahead log was folded into the file: cache.sqlite alone holds every reply
    assert not (tmp_path / "cache.sqlite-wal").exists()
    alone = tmp_path / "copy.sqlite"
    alone.write_bytes((tmp_path / "cache.sqlite").read_bytes())
    with sqlite3.connect(alone) as db:
        assert db.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 10


def test_close_reaches_the_connections_of_worker_threads(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    usage = TokenUsage(prompt_tokens=1, completion_tokens=1)

    def work(i: int) -> None:
        cache.put(f"k{i}", "m", "{}", usage)
        assert cache.get(f"k{i}") is not None

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    cache.close()
    assert not (tmp_path / "cache.sqlite-wal").exists()  # the last connection has closed
    assert cache.get("k2") is not None  # a later lookup opens a new connection
    assert len(cache) == 3
    cache.close()


def test_a_finished_thread_s_connection_is_closed_when_the_next_one_opens(
    tmp_path: Path,
) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    worker = threading.Thread(target=cache.get, args=("k",))
    worker.start()
    worker.join()
    assert worker in cache._opened
    other = threading.Thread(target=cache.get, args=("k",))
    other.start()
    other.join()
    assert worker not in cache._opened and other in cache._opened
    cache.close()


def test_close_leaves_a_running_thread_its_connection(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    usage = TokenUsage(prompt_tokens=1, completion_tokens=1)
    opened, go_on = threading.Event(), threading.Event()

    def work() -> None:
        cache.get("k")
        opened.set()
        go_on.wait(10)
        cache.put("k", "m", "{}", usage)  # still its own open connection

    worker = threading.Thread(target=work)
    worker.start()
    opened.wait(10)
    cache.close()
    assert worker in cache._opened
    go_on.set()
    worker.join()
    assert cache.get("k") is not None
    cache.close()
    assert cache._opened == {}


def test_the_debate_process_exits_with_its_cache_and_result_complete(tmp_path: Path) -> None:
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "debate._cli.main", "run", TOPIC, "--model", "scripted"]
    argv += ["--seed", "3", "--out", str(out), "--quiet"]
    first = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, check=False)
    assert first.returncode == 0, first.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "cache.sqlite",
        "report.html",
        "report.md",
        "result.json",
        "run.json",
    ]
    result = (out / "result.json").read_text()
    again = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, check=False)
    assert again.returncode == 0, again.stderr
    run = json.loads((out / "run.json").read_text())
    assert (run["status"], run["cache_hits"], run["cache_misses"]) == ("finished", 10, 0)
    assert (out / "result.json").read_text() == result


def test_only_the_process_s_own_command_freezes_the_collector() -> None:
    code = (
        "import gc, sys\nfrom debate._cli.main import main\n"
        "main(['--version'])\nbefore = gc.get_freeze_count()\n"
        "sys.argv = ['debate', '--version']\nmain()\n"
        "sys.stderr.write(f'FROZEN {before} {gc.get_freeze_count() > 0}\\n')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert "FROZEN 0 True" in out.stderr


@pytest.mark.parametrize(
    ("argv", "collecting"),
    [
        (["run", "--help"], False),
        (["judge", "--help"], False),
        (["batch", "--help"], True),
        (["serve", "--help"], True),
        (["--version"], True),
    ],
)
def test_a_bounded_command_runs_without_the_cyclic_collector(
    argv: list[str], collecting: bool
) -> None:
    # in its own process only; a caller passing argv (a test, a program) keeps its collector
    code = (
        "import gc, sys\nfrom debate._cli.main import main\n"
        f"main({argv!r})\nkept = gc.isenabled()\n"
        f"sys.argv = ['debate', *{argv!r}]\nmain()\n"
        "sys.stderr.write(f'COLLECTING {kept} {gc.isenabled()}\\n')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert f"COLLECTING True {collecting}" in out.stderr


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"]])
def test_help_still_works(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 0
    assert "usage: debate" in capsys.readouterr().out


def test_the_command_s_entry_imports_the_cli_without_collecting_then_freezes() -> None:
    # the imports' objects live as long as the process: no collection walks them, and after
    # them the collector runs again (a batch keeps it) over what the command makes
    code = (
        "import gc, sys\nfrom debate._cli.entry import main\nbefore = []\n"
        "gc.callbacks.append(lambda p, i: before.append(p) if not gc.get_freeze_count() else 0)\n"
        "sys.argv = ['debate', 'batch', '--help']\n"
        "code = main()\nloaded = 'debate._cli.batch' in sys.modules\n"
        "sys.stderr.write(f'ENTRY {code} {loaded} {len(before)} {gc.isenabled()}\\n')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert "ENTRY 0 True 0 True" in out.stderr, out.stderr


def test_the_version_alone_is_printed_before_any_command_is_imported() -> None:
    # a script checking the installed version waits for no parser: argparse's line, exit 0
    code = (
        "import sys\nfrom debate._cli.entry import main\nsys.argv = ['debate', '--version']\n"
        "code = main()\nloaded = sorted(m for m in sys.modules if m.startswith('debate._cli.'))\n"
        "sys.stderr.write(f'VERSION {code} {loaded}\\n')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout == f"debate {__version__}\n"
    assert "VERSION 0 ['debate._cli.entry']" in out.stderr, out.stderr
