"""PostgreSQL plumbing shared by the service's stores: pools, versioned schemas, safe names.

psycopg 3 rather than asyncpg: the stores' callers are synchronous (the HTTP routes call the
store in worker threads, the runner's event writer is a thread, the response cache is read in
``asyncio.to_thread``), as the SQLite stores are, so one synchronous ``ConnectionPool`` serves
them all with the same interface; psycopg also gives LISTEN/NOTIFY on a plain connection
(``Connection.notifies``) and ships binary wheels (``psycopg[binary,pool]``).

Schemas are versioned per component (``jobs``, ``responses``) in one ``schema_version`` table:
each component's migrations are a list of SQL scripts, applied in order under an advisory lock
(replicas starting together migrate once). A database whose version is newer than this build
knows is refused in one line: an older server would write rows the newer schema does not
expect.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from debate.exceptions import ConfigurationError

logger = logging.getLogger(__name__)

SCHEMES = ("postgresql", "postgres")
"""URL schemes served by PostgreSQL (libpq accepts both)."""
_MIGRATION_LOCK = 0x64656261  # "deba": one advisory lock for every component's migrations
_PASSWORD = re.compile(r"(://[^:/@]*):[^@/]*@")


def redact(url: str) -> str:
    """The URL without its password (``postgresql://ann:***@db/jobs``), safe for messages."""
    return _PASSWORD.sub(r"\1:***@", url)


def open_pool(url: str, *, max_size: int, name: str, field: str = "--database") -> Any:
    """A connection pool on ``url``, its first connection made now.

    Raises:
        ConfigurationError: the server cannot be reached or refuses the login (the message
            names the URL without its password).
    """
    import psycopg
    from psycopg_pool import ConnectionPool

    try:  # one plain connection first: the pool would retry a refusal until its timeout
        psycopg.connect(url, connect_timeout=10).close()
    except Exception as exc:  # psycopg's OperationalError, or a malformed URL's ProgrammingError
        raise ConfigurationError(
            f"{field}: cannot connect to {redact(url)} ({_reason(exc)}); check the host, "
            "port, database name and credentials",
            field=field,
        ) from exc
    pool = ConnectionPool(
        url,
        min_size=1,
        max_size=max_size,
        kwargs={"autocommit": True, "connect_timeout": 10},
        name=name,
        open=False,
    )
    pool.open(wait=True, timeout=30)
    return pool


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return redact(text)[:200]


def migrate(pool: Any, component: str, migrations: Sequence[str], field: str = "--database") -> int:
    """Bring ``component``'s tables to the newest version this build knows; return it.

    Raises:
        ConfigurationError: the database holds a newer version of ``component``.
    """
    known = len(migrations)
    with pool.connection() as db, db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        db.execute(
            "CREATE TABLE IF NOT EXISTS schema_version ("
            "component TEXT PRIMARY KEY, version INTEGER NOT NULL, "
            "applied DOUBLE PRECISION NOT NULL)"
        )
        row = db.execute(
            "SELECT version FROM schema_version WHERE component = %s", (component,)
        ).fetchone()
        found = 0 if row is None else int(row[0])
        if found > known:
            raise ConfigurationError(
                f"{field}: its {component} schema is version {found}, newer than this build's "
                f"{known}; upgrade debate on this server to the version the other servers run",
                field=field,
            )
        for version in range(found + 1, known + 1):
            db.execute(migrations[version - 1])
            logger.info("%s schema: migrated to version %d", component, version)
        if found < known:
            db.execute(
                "INSERT INTO schema_version (component, version, applied) "
                "VALUES (%s, %s, EXTRACT(EPOCH FROM clock_timestamp())) "
                "ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version, "
                "applied = EXCLUDED.applied",
                (component, known),
            )
    return known
