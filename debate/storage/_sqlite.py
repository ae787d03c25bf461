"""Write transactions on a SQLite file: in turn within a process, promptly across processes.

SQLite lets one writer in at a time; a writer that finds the file locked sleeps in its busy
handler, in steps that grow to 100 ms, whatever the lock's holder is doing. The service's
job store and response cache share one file and are written by two processes (the HTTP
server's submits; the runner's claims, events and cached replies) and several threads:
measured with ``benchmarks/bench_service.py``, those sleeps were most of a slow submit's
time (p99 490 ms with 32 jobs running). So:

- writers of one process wait on a lock of the process, handed over the moment it is
  released;
- a writer that finds the file locked by another process asks again after 0.5 ms, then
  1, 2, 4 and every 5 ms, until ``timeout``, instead of sleeping in SQLite's steps.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_LOCKS: dict[str, threading.RLock] = {}
_GUARD = threading.Lock()
FIRST_WAIT_S = 0.0005
LONGEST_WAIT_S = 0.005
TIMEOUT_S = 30.0


def write_lock(path: str | Path) -> threading.RLock:
    """The process's lock for writing to the database file at ``path``."""
    key = str(Path(path).resolve())
    with _GUARD:
        return _LOCKS.setdefault(key, threading.RLock())


@contextmanager
def write_transaction(
    db: sqlite3.Connection, lock: threading.RLock, timeout: float = TIMEOUT_S
) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` on ``db`` (rolled back on any error), in turn.

    ``lock`` is :func:`write_lock` of the file, looked up once by the caller (resolving
    the path on every write was a tenth of a submit's CPU).

    Raises:
        sqlite3.OperationalError: another process held the file for ``timeout`` seconds.
    """
    with lock:
        _begin(db, timeout)
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")


def _begin(db: sqlite3.Connection, timeout: float) -> None:
    """``BEGIN IMMEDIATE``, asked again at short intervals while another process writes."""
    (busy,) = db.execute("PRAGMA busy_timeout").fetchone()
    db.execute("PRAGMA busy_timeout = 0")
    try:
        end, wait = time.monotonic() + timeout, FIRST_WAIT_S
        while True:
            try:
                db.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > end:
                    raise
            time.sleep(wait)
            wait = min(wait * 2, LONGEST_WAIT_S)
    finally:
        db.execute(f"PRAGMA busy_timeout = {int(busy)}")
