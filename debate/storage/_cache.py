"""A content-addressed response cache in SQLite: completed calls survive a crash.

The key is a digest of everything that determines a reply (model, endpoint, messages,
schema, sampling settings, seed), so re-running the same command replays every call that
had completed and sends only the ones that had not. Only valid replies are stored (the
caller, :func:`debate.runtime._ask.ask`, decides): an invalid or truncated reply is asked
again of the model on a resumed run, so a re-ask or a larger token budget reaches the server
instead of replaying the failure. WAL mode and one transaction per write let concurrent
runs share a cache file.

The table keeps the ``reason`` and ``error`` columns of files written before that rule, so
old and new versions read each other's files; new rows leave them NULL, and rows that hold an
invalid reply (a reason set) are deleted when a cache is opened, since nothing replays them.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from debate.models._base import (
    Message,
    ModelSettings,
    TokenUsage,
)
from debate.storage._sqlite import write_lock, write_transaction

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    reason TEXT,  -- unused: NULL in new rows (files written before hold invalid replies)
    error TEXT,  -- unused, likewise
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cached_tokens INTEGER NOT NULL,
    created REAL NOT NULL
)
"""


def request_key(
    model: str,
    endpoint: str | None,
    messages: list[Message],
    schema: dict[str, object],
    settings: ModelSettings,
) -> str:
    """Digest of everything that determines a reply (the timeout does not)."""
    payload = {
        "model": model,
        "endpoint": endpoint,
        "messages": [m.model_dump() for m in messages],
        "schema": schema,
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
        "seed": settings.seed,
    }
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedReply:
    """One stored call: the text of a valid reply and the tokens it cost when it was made."""

    text: str
    usage: TokenUsage
    model: str = ""
    """The model that answered (as the server reported it), so a replay records it too."""


class ResponseCache:
    """The SQLite store of valid replies, looked up and filled by ``ask``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._opened: dict[threading.Thread, sqlite3.Connection] = {}
        """Every open connection, by the thread that opened it, so :meth:`close` reaches
        the connections of worker threads too (``ask`` reads and writes in them)."""
        self._guard = threading.Lock()
        self._write_lock = write_lock(self.path)
        self.hits = 0
        """Lookups answered from the cache in this process."""
        self.misses = 0
        """Lookups that found nothing (the call went to the model)."""
        with self._connect() as db:
            db.execute(SCHEMA_SQL)
            db.execute("DELETE FROM responses WHERE reason IS NOT NULL")  # see the module doc

    def _connect(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            # Each thread uses only its own connection; check_same_thread=False lets
            # close() (another thread) close it once its thread is done with it.
            db = sqlite3.connect(
                self.path, timeout=30.0, isolation_level=None, check_same_thread=False
            )
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
            with self._guard:
                ended = [t for t in self._opened if not t.is_alive()]
                for thread in ended:  # a finished run's workers: their connections go now
                    self._opened.pop(thread).close()
                self._opened[threading.current_thread()] = db
        return db

    def get(self, key: str) -> CachedReply | None:
        """The stored reply, or None."""
        row = (
            self._connect()
            .execute(
                "SELECT text, prompt_tokens, completion_tokens, cached_tokens, model "
                "FROM responses WHERE key = ?",
                (key,),
            )
            .fetchone()
        )
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        usage = TokenUsage(prompt_tokens=row[1], completion_tokens=row[2], cached_tokens=row[3])
        return CachedReply(text=row[0], usage=usage, model=row[4])

    def put(self, key: str, model: str, text: str, usage: TokenUsage) -> None:
        """Store one valid reply (first writer wins: valid replies to a key are equivalent).

        ``model`` is the model that answered, as the server reported it.
        """
        with write_transaction(self._connect(), self._write_lock) as db:
            db.execute(
                "INSERT OR IGNORE INTO responses VALUES (?, ?, ?, NULL, NULL, ?, ?, ?, ?)",
                (
                    key,
                    model,
                    text,
                    usage.prompt_tokens,
                    usage.completion_tokens,
                    usage.cached_tokens,
                    time.time(),
                ),
            )

    def __len__(self) -> int:
        return int(self._connect().execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        """Close this thread's connection and those of the worker threads that have ended.

        A thread still running keeps its own: it may be in the middle of a lookup or a write
        (a cancelled call's worker thread runs on). When a run is over (``asyncio.run`` has
        joined its workers) that closes them all, and the last connection to close folds
        the write-ahead log into the file, so ``cache.sqlite`` holds every reply on its own.
        A later lookup opens a new connection.
        """
        me = threading.current_thread()
        with self._guard:
            done = [t for t in self._opened if t is me or not t.is_alive()]
            closing = [self._opened.pop(t) for t in done]
        for db in closing:
            db.close()
        self._local.db = None
