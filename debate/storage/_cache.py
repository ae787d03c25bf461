"""A content-addressed response cache in SQLite: completed calls survive a crash.

The key is a digest of everything that determines a reply (model, endpoint, messages,
schema, sampling settings, seed), so re-running the same command replays every call that
had completed and sends only the ones that had not. Invalid replies are stored too, with
the reason, so a resumed run takes the same path (same re-asks) as the first one.
WAL mode and one transaction per write let concurrent runs share a cache file.
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

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    reason TEXT,
    error TEXT,
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
    """One stored call: the reply text, and for an invalid reply its reason and error."""

    text: str
    reason: str | None
    error: str | None
    usage: TokenUsage


class ResponseCache:
    """The SQLite store behind :class:`CachedModel`."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self.hits = 0
        """Lookups answered from the cache in this process."""
        self.misses = 0
        with self._connect() as db:
            db.execute(SCHEMA_SQL)

    def _connect(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
        return db

    def get(self, key: str) -> CachedReply | None:
        """The stored reply, or None."""
        row = (
            self._connect()
            .execute(
                "SELECT text, reason, error, prompt_tokens, completion_tokens, cached_tokens "
                "FROM responses WHERE key = ?",
                (key,),
            )
            .fetchone()
        )
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        usage = TokenUsage(prompt_tokens=row[3], completion_tokens=row[4], cached_tokens=row[5])
        return CachedReply(text=row[0], reason=row[1], error=row[2], usage=usage)

    def put(
        self,
        key: str,
        model: str,
        text: str,
        usage: TokenUsage,
        *,
        reason: str | None = None,
        error: str | None = None,
    ) -> None:
        """Store one completed call (first writer wins; replies for a key are interchangeable)."""
        db = self._connect()
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(
                "INSERT OR IGNORE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    model,
                    text,
                    reason,
                    error,
                    usage.prompt_tokens,
                    usage.completion_tokens,
                    usage.cached_tokens,
                    time.time(),
                ),
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def __len__(self) -> int:
        return int(self._connect().execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        """Close this thread's connection."""
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None
