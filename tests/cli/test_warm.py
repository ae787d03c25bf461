"""``DEBATE_WARM=1``: ``debate run`` in a fork of a warm process gives what a fresh process gives.

Every command runs as ``python -m debate`` in its own process, as a user runs it, against
the OpenAI-compatible test server on 127.0.0.1 (threads of this test process). Each test has
its own runtime folder (``XDG_RUNTIME_DIR``), so its own warm process, stopped at its end;
a test fails if any process of its warm process is left.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from debate._cli import warm_client
from tests.support import ROOT
from tests.support.batch_helpers import same_reply
from tests.support.helpers import processes_with
from tests.support.openai_server import FakeOpenAIServer, Reply

KEY = "sk-warm-test-0123456789"


@pytest.fixture
def runtime() -> Iterator[Path]:
    """A private runtime folder; every warm process started in it is gone at the end.

    Short, under /tmp: a socket's path must fit in 108 bytes, and pytest's folders are long.
    """
    folder = Path(tempfile.mkdtemp(prefix="dw-", dir="/tmp"))
    yield folder
    try:
        _stopped(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _stopped(folder: Path) -> None:
    for path in folder.rglob("*.sock"):
        warm_client.ask(path, "stop")
    deadline = time.monotonic() + 10
    while warm_processes(folder) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = warm_processes(folder)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == [], "a warm process outlived its test"


def warm_processes(folder: Path) -> list[int]:
    """The warm process of ``folder`` and its forks (they share its command line)."""
    return processes_with("warm_server", str(folder))


def forks_of(folder: Path) -> list[int]:
    """The forks of ``folder``'s warm process: those whose parent is a warm process too."""
    found = warm_processes(folder)
    parents = {
        pid: int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        for pid in found
    }
    return [pid for pid, parent in parents.items() if parent in found]


def env_of(runtime: Path | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DEBATE_"))}
    if runtime is not None:
        env.update(DEBATE_WARM="1", XDG_RUNTIME_DIR=str(runtime))
    return {**env, **extra}


def run_argv(server: FakeOpenAIServer, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "debate",
        "run",
        "Should team 1 adopt the plan?",
        "--model",
        "m",
        "--base-url",
        server.base_url,
        "--seed",
        "1",
        "--no-cache",
        "--out",
        str(out),
        "--store",
        str(out.parent / f"{out.name}.sqlite"),
        *extra,
    ]


def debate(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)


def warm_started(env: dict[str, str]) -> None:
    """``debate warm start``: the warm process serves once it returns."""
    done = debate([sys.executable, "-m", "debate", "warm", "start"], env)
    assert done.returncode == 0, done.stdout + done.stderr


def comparable(out: Path) -> dict[str, object]:
    """result.json without what differs between any two runs (times, ids, paths)."""
    result = json.loads((out / "result.json").read_text())
    return {k: result[k] for k in ("decision", "usage", "transcript", "judges") if k in result}


def test_a_warm_run_gives_the_result_of_a_fresh_process(tmp_path: Path, runtime: Path) -> None:
    warm_started(env_of(runtime))
    with FakeOpenAIServer(responder=same_reply) as server:
        fresh = debate(run_argv(server, tmp_path / "fresh", "--api-key-env", ""), env_of(None))
        warm = [
            debate(run_argv(server, tmp_path / f"warm{i}", "--api-key-env", ""), env_of(runtime))
            for i in range(2)
        ]
    assert fresh.returncode == 0, fresh.stderr
    for i, done in enumerate(warm):
        assert done.returncode == 0, done.stderr
        assert "DEBATE_WARM" not in done.stderr  # served warm, not run here as a fallback
        assert comparable(tmp_path / f"warm{i}") == comparable(tmp_path / "fresh")
        assert done.stdout.replace(f"warm{i}", "fresh") == fresh.stdout
        assert (tmp_path / f"warm{i}" / "report.html").is_file()
    assert len(server.records) == 30  # ten calls each, none twice
    assert len(warm_processes(runtime)) == 1  # the forks ended; the warm process waits


def test_the_command_runs_in_a_fork_and_the_key_stays_with_it(
    tmp_path: Path, runtime: Path
) -> None:
    """The fork has the client's key; the warm process, started by that client, has none."""
    env = env_of(runtime, WARM_TEST_KEY=KEY)
    warm_started(env)
    with FakeOpenAIServer(latency=0.3, responder=same_reply) as server:
        command = run_argv(server, tmp_path / "out", "--api-key-env", "WARM_TEST_KEY")
        child = subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
        while not server.records and child.poll() is None:
            time.sleep(0.02)
        during = forks_of(runtime)  # the command's fork of the warm process
        _, stderr = child.communicate(timeout=120)
    assert child.returncode == 0, stderr
    assert len(during) == 1
    assert set(server.authorizations) == {f"Bearer {KEY}"}
    for pid in warm_processes(runtime):
        assert KEY.encode() not in Path(f"/proc/{pid}/environ").read_bytes()


def test_ctrl_c_reaches_the_fork(tmp_path: Path, runtime: Path) -> None:
    warm_started(env_of(runtime))
    with FakeOpenAIServer(latency=5.0, responder=same_reply) as server:
        command = run_argv(server, tmp_path / "out", "--api-key-env", "")
        child = subprocess.Popen(
            command, cwd=ROOT, env=env_of(runtime), stderr=subprocess.PIPE, text=True
        )
        while server.in_flight == 0 and child.poll() is None:
            time.sleep(0.02)
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=60)
    assert child.returncode == 130, stderr
    assert "interrupted" in stderr
    assert "Traceback" not in stderr
    assert len(warm_processes(runtime)) == 1  # the fork stopped; the warm process waits


def test_bad_input_fails_in_the_fork_as_it_does_here(tmp_path: Path, runtime: Path) -> None:
    warm_started(env_of(runtime))
    with FakeOpenAIServer(responder=same_reply) as server:
        argv = run_argv(server, tmp_path / "out", "--api-key-env", "", "--seed", "lots")
        fresh = debate(argv, env_of(None))
        warm = debate(argv, env_of(runtime))
        assert server.records == []
    assert fresh.returncode == warm.returncode == 2
    assert warm.stderr == fresh.stderr and "--seed" in warm.stderr


def test_the_first_command_runs_here_and_starts_the_warm_process(
    tmp_path: Path, runtime: Path
) -> None:
    """Nothing waits for the warm-up: the first command runs in its own process."""
    env = env_of(runtime)
    with FakeOpenAIServer(latency=0.3, responder=same_reply) as server:
        command = run_argv(server, tmp_path / "first", "--api-key-env", "")
        child = subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
        while not server.records and child.poll() is None:
            time.sleep(0.02)
        assert forks_of(runtime) == []  # the command is not a fork
        _, stderr = child.communicate(timeout=120)
        assert child.returncode == 0, stderr
        assert "DEBATE_WARM" not in stderr  # starting one is not a failure to report
        warm_started(env)  # the one the first command started, once it serves
        assert len(warm_processes(runtime)) == 1
        second = debate(run_argv(server, tmp_path / "second", "--api-key-env", ""), env)
    assert second.returncode == 0, second.stderr
    assert comparable(tmp_path / "second") == comparable(tmp_path / "first")


def test_a_folder_others_can_read_is_refused_and_the_command_runs_here(
    tmp_path: Path, runtime: Path
) -> None:
    (runtime / f"debate-warm-{os.getuid()}").mkdir(mode=0o755)
    os.chmod(runtime / f"debate-warm-{os.getuid()}", 0o755)
    with FakeOpenAIServer(responder=same_reply) as server:
        done = debate(run_argv(server, tmp_path / "out", "--api-key-env", ""), env_of(runtime))
    assert done.returncode == 0, done.stderr
    assert "DEBATE_WARM: no warm process" in done.stderr and "mode 700" in done.stderr
    assert (tmp_path / "out" / "result.json").is_file()
    assert warm_processes(runtime) == []


def test_warm_start_status_and_stop(runtime: Path) -> None:
    env = env_of(runtime)

    def warm(action: str) -> dict[str, object]:
        done = debate([sys.executable, "-m", "debate", "warm", action, "--json"], env)
        assert done.returncode == 0, done.stderr
        answer: dict[str, object] = json.loads(done.stdout)
        return answer

    assert warm("status")["running"] is False
    started = warm("start")
    assert started["running"] is True and warm_processes(runtime) == [started["pid"]]
    assert warm("status")["pid"] == started["pid"]
    text = debate([sys.executable, "-m", "debate", "warm", "status"], env)
    assert text.stdout.startswith(
        f"warm process for this installation: running (pid {started['pid']})"
    )
    assert warm("stop") == {"stopped": 1}
    deadline = time.monotonic() + 10
    while warm_processes(runtime) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert warm_processes(runtime) == []
    assert list((runtime / f"debate-warm-{os.getuid()}").iterdir()) == []  # nothing left


def test_an_edited_file_or_another_start_up_variable_gets_another_warm_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "debate"
    package.mkdir()
    (package / "module.py").write_text("A = 1\n")
    monkeypatch.setattr(warm_client, "PACKAGE", package)
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    first = warm_client.fingerprint()
    assert warm_client.fingerprint() == first
    (package / "module.py").write_text("A = 22\n")
    edited = warm_client.fingerprint()
    monkeypatch.setenv("PYTHONHASHSEED", "7")
    assert len({first, edited, warm_client.fingerprint()}) == 3


def test_only_the_one_debate_commands_go_warm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEBATE_WARM", "1")
    assert warm_client.wanted(["run", "topic"]) and warm_client.wanted(["--quiet", "council"])
    assert not warm_client.wanted(["batch", "file.jsonl"])
    assert not warm_client.wanted(["serve"])
    monkeypatch.setenv("DEBATE_WARM", "0")
    assert not warm_client.wanted(["run", "topic"])


def test_a_fork_killed_mid_command_is_reported(tmp_path: Path, runtime: Path) -> None:
    warm_started(env_of(runtime))
    with FakeOpenAIServer(latency=5.0, responder=lambda body: Reply(content="{}")) as server:
        command = run_argv(server, tmp_path / "out", "--api-key-env", "")
        child = subprocess.Popen(
            command, cwd=ROOT, env=env_of(runtime), stderr=subprocess.PIPE, text=True
        )
        while server.in_flight == 0 and child.poll() is None:
            time.sleep(0.02)
        forks = forks_of(runtime)
        assert len(forks) == 1
        os.kill(forks[0], signal.SIGKILL)
        _, stderr = child.communicate(timeout=60)
    assert child.returncode == 1
    assert f"the warm fork {forks[0]} ended without an exit status" in stderr


@pytest.mark.parametrize(
    ("first", "second", "expected", "note"),
    [
        (b'{"exit": 1}\n', b"", None, "could not start the command; running in this process"),
        (b"not json\n", b"", None, "could not start the command; running in this process"),
        (b'{"pid": 4000000}\n', b"", 1, "ended without an exit status"),
        (b'{"pid": 4000000}\n', b'{"exit": 3}\n', 3, None),
    ],
)
def test_the_client_reads_what_the_warm_process_answers(
    first: bytes,
    second: bytes,
    expected: int | None,
    note: str | None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A fork that fails before it is the command leaves the command to this process."""
    client, server = socket.socketpair()

    def answer() -> None:
        with server:
            head, fds, _, _ = socket.recv_fds(server, 8, 3)
            for fd in fds:
                os.close(fd)
            size = int.from_bytes(head, "big")
            body = b""
            while len(body) < size:  # read as the warm process does: all of it
                body += server.recv(size - len(body))
            server.sendall(first + second)

    thread = threading.Thread(target=answer)
    thread.start()
    with client:
        found = warm_client._handed(client, ["run", "topic"])
    thread.join()
    assert found == expected
    stderr = capsys.readouterr().err
    assert (note in stderr) if note else stderr == ""
