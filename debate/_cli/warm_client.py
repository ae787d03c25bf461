"""``DEBATE_WARM=1``: ``debate run``, ``judge`` and ``council`` run in a fork of a warm process.

Why: a fresh ``debate run`` spends about 0.6 s importing before its first call (pydantic
building its records' validators is most of it) and about 0.4 s more on first-use work
between its calls (templates compiled, reply schemas built, the HTTP client's imports),
against a critical path of four model calls. A warm process has done all of that once;
each command is then a fork of it that starts with everything in place, as Android's
zygote, Gradle's daemon and dmypy do (:mod:`debate._cli.warm_server`).

This module is the client, imported by the command's entry before anything heavy, so it
uses the standard library only. It finds the warm process of this installation (or starts
one), hands it the command line, the environment, the working directory, the umask and its
own stdin, stdout and stderr (the descriptors themselves, over a Unix socket), forwards
Ctrl-C, SIGTERM and SIGHUP to the fork, and exits with the fork's status. Anything that
fails before the command is handed over runs the command in this process instead, as
without ``DEBATE_WARM``; once handed over, the command is never run twice.

One warm process serves one installation as it is: its socket's name is a hash of the
interpreter, the package's files (their paths, sizes and modification times, prompts
included) and the variables read when Python and numpy start (``PYTHON*``, thread caps),
so an edited file or another virtual environment gets a warm process of its own. The old
one ends after :data:`IDLE_S` without a command (``DEBATE_WARM_IDLE``), or at ``debate warm
stop``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

WARM_COMMANDS = ("run", "judge", "council")
"""The commands a warm process runs: one debate or council each, then the fork exits. A
batch, the service and the tables' commands keep their own process (their forks, threads
and servers are their own business)."""

IDLE_S = 900.0
"""Seconds a warm process waits for a command before it ends (``DEBATE_WARM_IDLE``)."""

START_WAIT_S = 30.0
"""Longest wait of ``debate warm start`` for the warm process's socket."""

STARTUP_ENV = ("PYTHON", "LANG", "LC_", "OMP_", "OPENBLAS_", "MKL_", "VECLIB_", "NUMEXPR_")
"""Prefixes of the variables read as the interpreter and numpy start (the locale sets the
encoding of the standard streams, the thread caps numpy's pools): part of a warm
process's identity (a fork cannot change them), and all of the environment it starts
with besides :data:`BASE_ENV`. A fork gets the client's whole environment (API keys
included) for its command, and the warm process itself holds no key."""

BASE_ENV = ("PATH", "HOME", "TZ", "TMPDIR", "VIRTUAL_ENV", "DEBATE_WARM_IDLE")

FORWARDED = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)
"""Signals passed on to the fork (Windows has no SIGHUP; this module must import there)."""

PACKAGE = Path(__file__).resolve().parents[1]


def wanted(arguments: list[str]) -> bool:
    """Whether this command line goes to a warm process: asked for, and a warm command."""
    if os.environ.get("DEBATE_WARM", "").strip() not in ("1", "true", "yes", "on"):
        return False
    return next((a for a in arguments if not a.startswith("-")), None) in WARM_COMMANDS


SOCKET_PATH_MAX = 107
"""A Unix socket's path must fit in 108 bytes (``sun_path``), its terminating zero included."""

FINGERPRINT_CHARS = 20
"""Hex characters of :func:`fingerprint` in a socket's name."""


def unsupported() -> str | None:
    """Why this platform runs no warm process, or None (Linux)."""
    if sys.platform == "linux":
        return None
    # a fork of a process that loaded macOS's system libraries can crash; Windows has no fork
    return f"warm processes run on Linux only, not {sys.platform}"


def runtime_dir() -> Path:
    """The user's private folder of warm sockets: under ``$XDG_RUNTIME_DIR``, else ``/tmp``.

    ``/tmp`` too when a socket's path under the first would be too long.
    """
    base = os.environ.get("XDG_RUNTIME_DIR") or os.environ.get("TMPDIR") or "/tmp"
    folder = Path(base) / f"debate-warm-{os.getuid()}"
    if len(os.fsencode(_socket_in(folder, "0" * FINGERPRINT_CHARS))) > SOCKET_PATH_MAX:
        folder = Path("/tmp") / folder.name
    folder.mkdir(mode=0o700, exist_ok=True)
    info = folder.stat()
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise PermissionError(f"{folder} is not this user's private folder (mode 700)")
    return folder


def _package_files() -> Iterator[tuple[str, int, int]]:
    roots = [PACKAGE, PACKAGE.parent / "prompts"]
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if not name.endswith((".pyc", ".keep")):
                    info = os.stat(os.path.join(folder, name))
                    yield os.path.join(folder, name), info.st_size, info.st_mtime_ns


def fingerprint() -> str:
    """This installation's identity: interpreter, package files, start-up variables."""
    digest = hashlib.sha256()
    startup = sorted((k, v) for k, v in os.environ.items() if k.startswith(STARTUP_ENV))
    digest.update(repr((sys.executable, sys.version, startup)).encode())
    for entry in _package_files():
        digest.update(repr(entry).encode())
    return digest.hexdigest()[:FINGERPRINT_CHARS]


def _socket_in(folder: Path, name: str) -> Path:
    return folder / f"warm-{name}.sock"


def socket_path() -> Path:
    """The socket of this installation's warm process."""
    return _socket_in(runtime_dir(), fingerprint())


def run(arguments: list[str]) -> int | None:
    """Run the command line in a warm fork; its exit status, or None: run it here instead.

    With no warm process serving yet, this command starts one in the background and runs
    here, without waiting for its warm-up: the next command is served warm.
    """
    refused = unsupported()
    if refused is not None:
        _note(f"{refused}; running in this process")
        return None
    try:
        path = socket_path()
        conn = _connect(path)
        if conn is None:
            _start(path)
            return None
    except OSError as exc:
        _note(f"no warm process ({exc}); running in this process")
        return None
    with conn:
        return _handed(conn, arguments)


def _note(line: str) -> None:
    sys.stderr.write(f"debate: DEBATE_WARM: {line}\n")


def _connect(path: Path) -> socket.socket | None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(path))
    except (FileNotFoundError, ConnectionRefusedError):
        conn.close()
        return None
    return conn


def _start(path: Path) -> subprocess.Popen[bytes] | None:
    """Start the warm process of ``path``, unless one holds its lock (starting or serving).

    The warm process holds the lock file for its whole life, so two commands at once start
    one warm process (at worst two, the second ending at once when it finds the lock held).
    """
    lock = locked(path.with_suffix(".lock"))
    if lock is None:
        return None
    os.close(lock)  # free again for the warm process, which holds it for good
    env = {k: v for k, v in os.environ.items() if k.startswith(STARTUP_ENV) or k in BASE_ENV}
    with open(path.with_suffix(".log"), "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "debate._cli.warm_server", str(path)],
            cwd=PACKAGE.parent,  # this package first on the warm process's path
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,  # not in the terminal's process group: no Ctrl-C
        )


def locked(path: Path) -> int | None:
    """``path`` opened and locked, or None when another process holds its lock."""
    import fcntl  # POSIX only: not imported where the warm process does not run

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def started(path: Path) -> socket.socket | None:
    """A connection to the warm process of ``path``, started if need be and waited for."""
    conn = _connect(path)
    if conn is not None:
        return conn
    server = _start(path)
    deadline = time.monotonic() + START_WAIT_S
    while time.monotonic() < deadline:
        conn = _connect(path)
        if conn is not None or (server is not None and server.poll() is not None):
            return conn
        time.sleep(0.02)
    return None


def _descriptors() -> list[int]:
    """The client's stdin, stdout and stderr; /dev/null for one that is closed."""
    found = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
            found.append(fd)
        except OSError:
            found.append(os.open(os.devnull, os.O_RDWR))
    return found


def _handed(conn: socket.socket, arguments: list[str]) -> int | None:
    """Send the command over ``conn``; the fork's exit status (None: it never started)."""
    request = {
        "argv": [sys.argv[0], *arguments],
        "env": dict(os.environ),
        "cwd": os.getcwd(),
        "umask": _umask(),
        "path": sys.path,
    }
    try:
        _send(conn, request, _descriptors())
        reader = conn.makefile("rb")
        first = reader.readline()
    except OSError as exc:
        _note(f"the warm process refused the command ({exc}); running in this process")
        return None
    pid = _field(first, "pid")
    if pid is None:  # the fork could not become the command (the warm process's log says why)
        _note("the warm process could not start the command; running in this process")
        return None
    with _forwarding(pid):
        try:
            ended = reader.readline()
        except OSError:  # the fork's end of the socket was reset: it ended, somehow
            ended = b""
    code = _field(ended, "exit")
    if code is None:
        _note(f"the warm fork {pid} ended without an exit status (killed?)")
        return 1
    return code


def _send(conn: socket.socket, request: dict[str, object], fds: list[int]) -> None:
    """A request as the warm process reads it: 8 bytes of length with ``fds``, then JSON."""
    body = json.dumps(request).encode()
    socket.send_fds(conn, [struct.pack("!Q", len(body))], fds)
    conn.sendall(body)


def _field(line: bytes, name: str) -> int | None:
    """The integer ``name`` of a line of the warm process, or None (no line, or another)."""
    try:
        value = json.loads(line).get(name) if line else None
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, int) else None


def _umask() -> int:
    found = os.umask(0o022)
    os.umask(found)
    return found


@contextlib.contextmanager
def _forwarding(pid: int) -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP sent to this process go to the fork instead."""

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    before = {s: signal.signal(s, forward) for s in FORWARDED}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def servers() -> list[Path]:
    """The sockets of this user's warm processes (any installation)."""
    with contextlib.suppress(OSError):
        return sorted(runtime_dir().glob("warm-*.sock"))
    return []


def ask(path: Path, what: str, *, start: bool = False) -> int | None:
    """``ping`` or ``stop`` the warm process at ``path`` (``start``: one if none); its pid.

    None: no warm process answered there (a socket nobody listens on is removed); 0: one
    answered without a pid (another version of this package).
    """
    conn = started(path) if start else _connect(path)
    if conn is None:
        with contextlib.suppress(OSError):
            path.unlink()  # nobody listens: a warm process that was killed
        return None
    with conn:
        try:
            _send(conn, {what: True}, [])
            answer = conn.makefile("rb").readline()
        except OSError:
            return None
    if not answer:
        return None
    return _field(answer, "pid") or 0  # 0: another version of this package's answer


def stop(path: Path) -> int | None:
    """Ask the warm process at ``path`` to end; its pid, or None if none answered."""
    return ask(path, "stop")
