"""The warm process of ``DEBATE_WARM=1``: everything imported and used once, a fork per command.

Started by :mod:`debate._cli.warm_client` as ``python -m debate._cli.warm_server SOCKET``,
in its own session, with its output going to ``SOCKET``'s ``.log`` file. It:

1. imports the warm commands' modules, what a debate imports after its calls
   (:mod:`debate._preload`) and the HTTP client;
2. rehearses one debate with the offline scripted model in a temporary folder, so that the
   templates are compiled and the reply schemas built (what a fresh command does between
   its first calls); the rehearsal's output, logging and warnings are discarded;
3. listens on ``SOCKET`` (mode 600, in the user's mode-700 folder) and, for each command a
   process of the same user sends, forks: the fork takes the client's descriptors as its
   stdin, stdout and stderr, its environment, working directory, umask and ``sys.path``,
   runs the command as ``debate`` would, and sends back its pid first and its exit status
   last. The warm process itself never runs a command, so each fork starts from the same
   state.

A fork copies only the calling thread, so the warm process refuses to serve if anything it
imported or rehearsed left a thread running. It ends after ``DEBATE_WARM_IDLE`` seconds
without a command, when asked (``debate warm stop``), or when its socket is no longer its
own (another warm process of the same installation took the name).
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import logging
import os
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from debate._cli.warm_client import IDLE_S, locked

log = logging.getLogger(__name__)

LOOK_S = 30.0
"""How often an idle warm process checks that its socket is still its own."""

REQUEST_TIMEOUT_S = 5.0
"""Longest wait for a connected client's request (a local process sends it at once)."""


class _Warm(NamedTuple):
    """What the warm process serves with, and what a fork closes at once."""

    listener: socket.socket
    lock: int
    """The lock file's descriptor, held for the warm process's life (see ``_start``)."""
    path: Path
    inode: int
    """The socket file's, to tell whether ``path`` is still this warm process's socket."""


def main(argv: list[str] | None = None) -> int:
    """Serve commands on the socket path in ``argv`` until idle, stopped or replaced."""
    path = Path((argv or sys.argv[1:])[0])
    _log_to_stderr()
    lock = locked(path.with_suffix(".lock"))
    if lock is None:
        log.info("not serving: another warm process of this installation holds the lock")
        return 0
    warm_up()
    if threading.active_count() > 1:
        names = ", ".join(t.name for t in threading.enumerate())
        log.error("not serving: the warm-up left threads (%s), which a fork would lose", names)
        return 1
    listener, inode = _listen(path)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the forks are reaped by the kernel
    from debate._gc import freeze_survivors

    freeze_survivors()  # what the forks share is never walked by their collector
    log.info("serving %s", path)
    try:
        _serve(_Warm(listener, lock, path, inode), _idle())
    finally:
        listener.close()
        if _owns(path, inode):  # nothing went wrong: nothing of it is left to read
            for done in (path, path.with_suffix(".lock"), path.with_suffix(".log")):
                done.unlink(missing_ok=True)
        os.close(lock)
        log.info("ended")
    return 0


def _log_to_stderr() -> None:
    """The warm process's own lines go to its stderr (the ``.log`` file), with the time."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(process)d: %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


def _idle() -> float:
    given = os.environ.get("DEBATE_WARM_IDLE", "").strip()
    try:
        return float(given) if given else IDLE_S
    except ValueError:
        log.warning("DEBATE_WARM_IDLE=%r is not a number of seconds; using %s", given, IDLE_S)
        return IDLE_S


def warm_up() -> None:
    """Import what the warm commands use and rehearse one debate, its traces discarded."""
    from debate._cli.main import commands
    from debate._cli.main import main as command
    from debate._preload import HTTP_CLIENT, import_after_calls

    commands()  # every command's module, the warm ones among them
    import_after_calls((*HTTP_CLIENT, ("debate.models._openai_http", None)))
    with tempfile.TemporaryDirectory(prefix="debate-warm-") as scratch, _discarded():
        code = command(
            ["run", "Should the warm-up rehearsal pass?", "--model", "scripted", "--seed", "1"]
            + ["--out", f"{scratch}/out", "--store", f"{scratch}/store.sqlite", "--no-cache"]
        )
    root = logging.getLogger()
    for found in list(root.handlers):  # the rehearsal's handler; each command makes its own
        root.removeHandler(found)
    root.setLevel(logging.WARNING)
    log.info("warmed up (rehearsal exit %s)", code)


@contextlib.contextmanager
def _discarded() -> Iterator[None]:
    """The rehearsal's output and warnings go nowhere, and leave no "shown once" marks."""
    sink = io.StringIO()
    with (
        contextlib.redirect_stdout(sink),
        contextlib.redirect_stderr(sink),
        warnings.catch_warnings(record=True),
    ):
        warnings.simplefilter("always")
        yield


def _listen(path: Path) -> tuple[socket.socket, int]:
    """A listening socket at ``path``, bound under another name and renamed into place."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    staged = path.with_name(f"{path.name}.{os.getpid()}")
    listener.bind(str(staged))
    os.chmod(staged, 0o600)
    listener.listen(64)
    os.replace(staged, path)
    return listener, os.stat(path).st_ino


def _owns(path: Path, inode: int) -> bool:
    try:
        return os.stat(path).st_ino == inode
    except OSError:
        return False


def _serve(warm: _Warm, idle: float) -> None:
    """Fork a command per request until idle, stopped, or the socket is another's."""
    warm.listener.settimeout(min(idle, LOOK_S))
    last = time.monotonic()
    while _owns(warm.path, warm.inode):
        try:
            conn, _ = warm.listener.accept()
        except TimeoutError:
            if time.monotonic() - last >= idle:
                log.info("idle for %.0f s", idle)
                return
            continue
        last = time.monotonic()
        with conn:
            if _answered(warm, conn):
                return


def _answered(warm: _Warm, conn: socket.socket) -> bool:
    """Serve one connection; True when it asked the warm process to stop."""
    if not _same_user(conn):
        log.warning("refused a connection from another user")
        return False
    try:
        request, fds = _receive(conn)
    except (OSError, ValueError) as exc:
        log.warning("refused a request: %s", exc)
        return False
    if request.get("stop") or request.get("ping"):
        conn.sendall(_line(pid=os.getpid()))
        return bool(request.get("stop"))
    if os.fork() == 0:
        warm.listener.close()
        os.close(warm.lock)  # the lock is the warm process's, not a command's
        _child(conn, request, fds)  # never returns
    for fd in fds:
        os.close(fd)
    return False


def _line(**fields: int) -> bytes:
    """One answer to the client: a JSON object on a line (see ``warm_client._field``)."""
    return json.dumps(fields).encode() + b"\n"


def _same_user(conn: socket.socket) -> bool:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return bool(uid == os.getuid())


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """The client's request and descriptors: 8 bytes of length, then that much JSON."""
    conn.settimeout(REQUEST_TIMEOUT_S)
    head, fds, _flags, _addr = socket.recv_fds(conn, 8, 3)
    try:
        (size,) = struct.unpack("!Q", _exactly(conn, 8, head))
        request = json.loads(_exactly(conn, size))
        if not isinstance(request, dict) or not (
            request.get("stop") or request.get("ping") or len(fds) == 3
        ):
            raise ValueError("not a request of debate's warm client")
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    conn.settimeout(None)
    return request, fds


def _exactly(conn: socket.socket, size: int, have: bytes = b"") -> bytes:
    """``have`` and what follows it on ``conn``, ``size`` bytes in all (ValueError: fewer came)."""
    while len(have) < size:
        more = conn.recv(min(size - len(have), 1 << 16))
        if not more:
            raise ValueError("the request ended early")
        have += more
    return have


def _child(conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    """In the fork: become the client's command, run it, report its status, exit."""
    code = 1
    try:
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _become(request, fds)
        conn.sendall(_line(pid=os.getpid()))
        code = _command()
        _exit_as_a_process_does()
    except BaseException:  # noqa: BLE001 - the fork must report and exit, whatever happened
        log.exception("the warm fork failed")
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        with contextlib.suppress(OSError):
            conn.sendall(_line(exit=code))
        os._exit(code)


def _become(request: dict[str, Any], fds: list[int]) -> None:
    """Take the client's descriptors, environment, folder, umask, path and command line."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    for stream, fd in ((sys.stdout, 1), (sys.stderr, 2)):
        if isinstance(stream, io.TextIOWrapper):  # a terminal's output shows line by line
            stream.reconfigure(line_buffering=os.isatty(fd))
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.umask(int(request["umask"]))
    sys.path[:] = list(request["path"])
    sys.argv[:] = list(request["argv"])
    logging.getLogger(__name__).handlers.clear()  # the log file is the warm process's own


def _exit_as_a_process_does() -> None:
    """What the interpreter does at exit before the fork's ``os._exit`` skips it.

    It waits for the threads that are not daemons, then runs the exit handlers. A fork
    cannot simply return into the warm process's stack and exit: it would run the warm
    process's own clean-up (and remove the socket of the warm process it came from).
    """
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()


def _command() -> int:
    """The ``debate`` command of ``sys.argv``, as :func:`debate._cli.entry.main` runs it."""
    from debate._cli.main import main as command

    try:
        return command()
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return int(exc.code or 0)
        sys.stderr.write(f"{exc.code}\n")
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
