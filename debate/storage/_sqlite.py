"""Write transactions on a SQLite file, taken in turn within the process.

SQLite lets one writer in at a time; a writer that finds the file locked sleeps in its busy
handler, in steps that grow to 100 ms, whatever the lock's holder is doing. The service's
job store and response cache share one file and write from several threads (the API's
submits, the runner's claims, events and cached replies): measured with
``benchmarks/bench_service.py``, those sleeps were most of a slow submit's time. Writers of
one process wait here instead, on a lock handed over the moment it is released; writers in
other processes still meet SQLite's own lock and busy timeout.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_LOCKS: dict[str, threading.RLock] = {}
_GUARD = threading.Lock()


def write_lock(path: str | Path) -> threading.RLock:
    """The process's lock for writing to the database file at ``path``."""
    key = str(Path(path).resolve())
    with _GUARD:
        return _LOCKS.setdefault(key, threading.RLock())


@contextmanager
def write_transaction(
    db: sqlite3.Connection, lock: threading.RLock
) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` on ``db`` (rolled back on any error), in turn.

    ``lock`` is :func:`write_lock` of the file, looked up once by the caller (resolving
    the path on every write was a tenth of a submit's CPU).
    """
    with lock:
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
