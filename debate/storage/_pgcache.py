"""The response cache in PostgreSQL: the replicas of a service share their completed calls.

Same keys, same rules as :class:`~debate.storage._cache.ResponseCache` (only valid replies,
first writer wins unless ``replace``, a call's cost beside its reply), in the database the
service's jobs live in, so a job taken over from a killed replica replays every call that
replica had completed. It subclasses ``ResponseCache`` so every caller that takes a cache
(``ask``, the panel, the API) takes this one unchanged; it overrides every method that
touches storage (its row's reading and writing).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby
from typing import Any

from debate.storage._cache import CachedReply, ResponseCache, Row
from debate.storage._group import GroupCommit
from debate.storage._pg import migrate, open_pool

MIGRATIONS = (
    """CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cached_tokens INTEGER NOT NULL,
    created DOUBLE PRECISION NOT NULL,
    attempts INTEGER,  -- the call's cost over all its attempts (NULL: one attempt)
    answered INTEGER,
    total_prompt_tokens INTEGER,
    total_completion_tokens INTEGER,
    total_cached_tokens INTEGER
)""",
)
"""The ``responses`` component's schema versions (see :func:`debate.storage._pg.migrate`).
One table: PostgreSQL has no old readers to keep compatible, so the cost sits in the row."""


class PgResponseCache(ResponseCache):
    """Valid replies in PostgreSQL, looked up and filled by ``ask`` from worker threads.

    Args:
        url: A ``postgresql://`` URL.
        max_size: Connections its pool may open (lookups run in worker threads).
    """

    local_reads = False  # a round trip to the database: not on the event loop

    def __init__(self, url: str, *, max_size: int = 8) -> None:  # noqa: D107
        # ResponseCache.__init__ opens a SQLite file; nothing of it applies here.
        self.url = url
        self.hits = 0
        self.misses = 0
        self._group: GroupCommit[Row, None] = GroupCommit(self._write_many)
        self._lookups: GroupCommit[str, Sequence[Any] | None] = GroupCommit(self._rows)
        self._pool: Any = open_pool(url, max_size=max_size, name="debate-cache")
        migrate(self._pool, "responses", MIGRATIONS)

    async def get_async(self, key: str) -> CachedReply | None:
        """The stored reply, or None: lookups waiting together are one query."""
        return self._counted(await self._lookups.put(key))

    def _row(self, key: str) -> Sequence[Any] | None:
        return self._rows([key])[0]

    def _rows(self, keys: Sequence[str]) -> list[Sequence[Any] | None]:
        """Each key's stored row (None where there is none), in one query."""
        with self._pool.connection() as db:
            rows = db.execute(
                "SELECT text, prompt_tokens, completion_tokens, cached_tokens, model, attempts, "
                "answered, total_prompt_tokens, total_completion_tokens, total_cached_tokens, key "
                "FROM responses WHERE key = ANY(%s)",
                (list(keys),),
            ).fetchall()
        found = {row[-1]: row[:-1] for row in rows}
        return [found.get(key) for key in keys]

    def _write_many(self, rows: Sequence[Row]) -> list[None]:
        """Rows in order: each reply and its call's costs (NULL without).

        Each row commits on its own, as before; several go in one ``executemany`` per run of
        rows alike, which psycopg pipelines (one round trip for them all).
        """
        with self._pool.connection() as db, db.cursor() as cursor:
            for replace, alike in groupby(rows, key=lambda row: row[2]):
                values = [(*reply, *(costs or (None,) * 5)) for reply, costs, _ in alike]
                if len(values) == 1:
                    cursor.execute(_insert(replace), values[0])
                else:
                    cursor.executemany(_insert(replace), values)
        return [None] * len(rows)

    def __len__(self) -> int:
        with self._pool.connection() as db:
            row = db.execute("SELECT COUNT(*) FROM responses").fetchone()
        return int(row[0])

    def close(self) -> None:
        """Close the pool (a later call fails: the runner closes its cache when it stops)."""
        self._pool.close()


def _insert(replace: bool) -> str:
    """A reply row's insert: the first writer wins unless ``replace``."""
    conflict = (
        "DO UPDATE SET model = EXCLUDED.model, text = EXCLUDED.text, "
        "prompt_tokens = EXCLUDED.prompt_tokens, "
        "completion_tokens = EXCLUDED.completion_tokens, "
        "cached_tokens = EXCLUDED.cached_tokens, created = EXCLUDED.created, "
        "attempts = EXCLUDED.attempts, answered = EXCLUDED.answered, "
        "total_prompt_tokens = EXCLUDED.total_prompt_tokens, "
        "total_completion_tokens = EXCLUDED.total_completion_tokens, "
        "total_cached_tokens = EXCLUDED.total_cached_tokens"
        if replace
        else "DO NOTHING"
    )
    return (
        "INSERT INTO responses VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
        f"ON CONFLICT (key) {conflict}"
    )
