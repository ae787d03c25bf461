"""A content-addressed response cache in SQLite: completed calls survive a crash.

The key is a digest of everything that determines a call's original request (model,
endpoint, messages, schema, sampling settings, seed), so re-running the same command
replays every call that had completed and sends only the ones that had not. A call is one
key whatever its attempts took: the valid reply it ended with is stored under its first
request, not under the re-ask conversation that produced it, with what all its attempts
cost (``call_costs``), so a replayed call is recorded as it was when it was made. Only
valid replies are stored (the caller, :func:`debate.runtime._ask.ask`, decides): an
invalid or truncated reply is never replayed, so on a resumed run an unfinished call starts
again from its first request. WAL mode and one transaction per write let concurrent runs
share a cache file.

The table keeps the ``reason`` and ``error`` columns of files written before that rule, so
old and new versions read each other's files; new rows leave them NULL, and rows that hold an
invalid reply (a reason set) are deleted when a cache is opened, since nothing replays them.
A call's cost is in a table of its own, so that a version that does not know it still
writes its nine-column rows; a row without a cost (written by such a version) is replayed
as one attempt that cost its reply's tokens.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from debate.models import (
    Message,
    ModelSettings,
    TokenUsage,
)
from debate.storage._group import GroupCommit
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
GROUP_ROWS = 8
"""Replies one transaction writes at most: the app's submits wait for the file's write lock
behind it (submission p99 rose in 5 of 7 benchmark pairs with no bound)."""

Row = tuple[tuple[Any, ...], tuple[int, ...] | None, bool]
"""One write: the reply row (key, model, text, its tokens, time), its call's costs, replace."""

COSTS_SQL = """
CREATE TABLE IF NOT EXISTS call_costs (
    key TEXT PRIMARY KEY,  -- a key of responses
    attempts INTEGER NOT NULL,
    answered INTEGER NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cached_tokens INTEGER NOT NULL
)
"""


def request_key(
    model: str,
    endpoint: str | None,
    messages: list[Message],
    schema: dict[str, object],
    settings: ModelSettings,
) -> str:
    """Digest of everything that determines a call's first request (the timeout does not).

    ``messages`` and ``settings`` are the call's own, as its first attempt sends them: a
    re-ask's conversation or a larger token budget belongs to an attempt, not to the key.
    """
    return keyed_request(model, endpoint, messages, canonical_json(schema), settings)


def keyed_request(
    model: str,
    endpoint: str | None,
    messages: list[Message],
    schema_text: str,
    settings: ModelSettings,
) -> str:
    """:func:`request_key` with the schema given as its :func:`canonical_json` text.

    The same digest: the payload's canonical JSON is written key by key in sorted order,
    the schema's part as given. A reply model's schema is the same at every call, so a
    caller serializes it once (sorting its keys took most of a key's 160 us).
    """
    parts = (
        ("endpoint", canonical_json(endpoint)),
        ("max_tokens", canonical_json(settings.max_tokens)),
        ("messages", canonical_json([m.model_dump() for m in messages])),
        ("model", canonical_json(model)),
        ("schema", schema_text),
        ("seed", canonical_json(settings.seed)),
        ("temperature", canonical_json(settings.temperature)),
    )
    blob = "{" + ",".join(f'"{name}":{text}' for name, text in parts) + "}"
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def canonical_json(value: object) -> str:
    """The JSON a request's key digests: keys sorted, no spaces, text as it is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class CallCost:
    """What one call took over all its attempts when it was made."""

    attempts: int
    """Requests sent for it: the first, its re-asks and its retries after provider faults."""
    answered: int
    """Those of its requests that got a reply (a provider fault gets none)."""
    usage: TokenUsage
    """Tokens of all its attempts together."""


@dataclass(frozen=True)
class CachedReply:
    """One stored call: the text of a valid reply and the tokens it cost when it was made."""

    text: str
    usage: TokenUsage
    """Tokens of the attempt that gave this reply."""
    model: str = ""
    """The model that answered (as the server reported it), so a replay records it too."""
    cost: CallCost | None = None
    """The whole call's attempts and tokens; None in a row written without them."""

    @property
    def call_cost(self) -> CallCost:
        """The call's cost, a row without one taken as a single attempt."""
        return self.cost or CallCost(attempts=1, answered=1, usage=self.usage)


class ResponseCache:
    """The SQLite store of valid replies, looked up and filled by ``ask``."""

    local_reads: ClassVar[bool] = True
    """A lookup is a read of a local file that never waits for a writer (WAL): cheaper made
    on the event loop than handed to a thread (the service makes one a call). A cache
    whose lookups cross a network says False, and ``ask`` makes them in a thread."""

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
        self._group: GroupCommit[Row, None] = GroupCommit(self._write_many, most=GROUP_ROWS)
        with self._connect() as db:
            db.execute(SCHEMA_SQL)
            db.execute(COSTS_SQL)
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
        return self._counted(self._row(key))

    def _counted(self, row: Sequence[Any] | None) -> CachedReply | None:
        """The reply of a looked-up row, or None, counted as a hit or a miss."""
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return reply_of(row)

    async def get_async(self, key: str) -> CachedReply | None:
        """:meth:`get` off the event loop (a cache whose lookups cross a network)."""
        return await asyncio.to_thread(self.get, key)

    def put(
        self,
        key: str,
        model: str,
        text: str,
        usage: TokenUsage,
        cost: CallCost | None = None,
        *,
        replace: bool = False,
    ) -> None:
        """Store one valid reply and what its call cost, in one transaction.

        The first writer wins (valid replies to a key are equivalent) unless ``replace``:
        a stored reply that no longer validates is replaced by the one that does.
        ``model`` is the model that answered, as the server reported it.
        """
        self._write_many([stored_row(key, model, text, usage, cost, replace)])

    async def put_async(
        self,
        key: str,
        model: str,
        text: str,
        usage: TokenUsage,
        cost: CallCost | None = None,
        *,
        replace: bool = False,
    ) -> None:
        """:meth:`put` off the event loop; returns once the reply is committed.

        Puts that arrive while another is written share the next transaction
        (:class:`~debate.storage._group.GroupCommit`).
        """
        await self._group.put(stored_row(key, model, text, usage, cost, replace))

    def _row(self, key: str) -> Sequence[Any] | None:
        """The stored row of ``key`` in :func:`reply_of`'s column order, or None."""
        row: Sequence[Any] | None = (
            self._connect()
            .execute(
                "SELECT r.text, r.prompt_tokens, r.completion_tokens, r.cached_tokens, r.model, "
                "c.attempts, c.answered, c.prompt_tokens, c.completion_tokens, c.cached_tokens "
                "FROM responses r LEFT JOIN call_costs c ON c.key = r.key WHERE r.key = ?",
                (key,),
            )
            .fetchone()
        )
        return row

    def _write_many(self, rows: Sequence[Row]) -> list[None]:
        """Write rows in order, in one transaction: each reply and its call's costs."""
        with write_transaction(self._connect(), self._write_lock) as db:
            for reply, costs, replace in rows:
                verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
                key = reply[0]
                if replace:
                    db.execute("DELETE FROM call_costs WHERE key = ?", (key,))
                stored = db.execute(
                    f"{verb} INTO responses VALUES (?, ?, ?, NULL, NULL, ?, ?, ?, ?)", reply
                )
                if costs is not None and stored.rowcount == 1:  # the cost of the reply kept
                    db.execute(
                        "INSERT OR REPLACE INTO call_costs VALUES (?, ?, ?, ?, ?, ?)",
                        (key, *costs),
                    )
        return [None] * len(rows)

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


def stored_row(
    key: str, model: str, text: str, usage: TokenUsage, cost: CallCost | None, replace: bool
) -> Row:
    """What :meth:`ResponseCache.put` writes for a reply (see :data:`Row`)."""
    tokens = (usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens)
    reply = (key, model, text, *tokens, time.time())
    costs = None
    if cost is not None:
        total = cost.usage
        costs = (
            cost.attempts,
            cost.answered,
            total.prompt_tokens,
            total.completion_tokens,
            total.cached_tokens,
        )
    return reply, costs, replace


def reply_of(row: Sequence[Any]) -> CachedReply:
    """A stored reply from its row, in both stores' column order.

    Text, the reply's three token counts, model, then attempts, answered and the three
    counts of all attempts (NULL attempts: a reply stored before calls' costs were kept).
    """
    usage = TokenUsage(prompt_tokens=row[1], completion_tokens=row[2], cached_tokens=row[3])
    cost = None
    if row[5] is not None:
        total = TokenUsage(prompt_tokens=row[7], completion_tokens=row[8], cached_tokens=row[9])
        cost = CallCost(attempts=row[5], answered=row[6], usage=total)
    return CachedReply(text=row[0], usage=usage, model=row[4], cost=cost)
