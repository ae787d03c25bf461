"""The job store a runner needs, and the one a ``--database`` value opens.

Two backends satisfy :class:`JobBackend`: :class:`~debate.service._store.JobStore` (one
SQLite file, one server) and :class:`~debate.service._pgstore.PgJobStore` (PostgreSQL,
several replicas). The runner, the runner process and the app use the protocol only, so
neither carries an ``if postgres``: what differs (leases, recovery at start, how an event
stream wakes, where the response cache lives) is behind the store's own methods.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from debate.service._feed import NotifyWatch, PollWatch
from debate.service._models import (
    Job,
    JobError,
    JobEvent,
    JobKind,
    JobRequest,
    JobStatus,
    JobSummary,
)
from debate.storage import ResponseCache


class JobStoreLike(Protocol):
    """What the app needs of the job store (``debate.service._store.JobStore``)."""

    def submit(
        self,
        kind: JobKind,
        request: JobRequest,
        *,
        token: str | None,
        idempotency_key: str | None,
        room: tuple[int, int] | None = None,
    ) -> tuple[Job, bool]:
        """Queue a job (see ``JobStore.submit``); errors with ``status``/``error`` refuse it."""

    def get(self, job_id: str) -> Job | None: ...  # noqa: D102

    def request(self, job_id: str) -> JobRequest | None: ...  # noqa: D102

    def owns(self, job_id: str, token: str | None) -> bool: ...  # noqa: D102

    def list(self, limit: int = 100, token: str | None = None) -> builtins.list[Job]: ...  # noqa: D102

    def summaries(
        self,
        limit: int = 100,
        token: str | None = None,
        *,
        status: str | None = None,
        outcome: str | None = None,
    ) -> builtins.list[JobSummary]:
        """``GET /v1/jobs``: the newest summaries first, of ``token``'s jobs when given."""

    def active(self, token: str | None = None) -> int: ...  # noqa: D102

    def events(self, job_id: str, after: int = 0) -> builtins.list[JobEvent]: ...  # noqa: D102


class JobBackend(JobStoreLike, Protocol):
    """What the runner and the app use of a job store (see ``JobStore`` for each method)."""

    @property
    def lease(self) -> float | None:
        """Seconds a claim holds without renewal (None: no leases; one runner per database)."""

    def counts(self) -> dict[JobStatus, int]: ...  # noqa: D102

    def claim(  # noqa: D102
        self, limit: int = 1, *, per_token: int | None = None
    ) -> builtins.list[tuple[Job, JobRequest]]: ...

    def renew(self, job_ids: Sequence[str]) -> set[str]:
        """Extend the leases on these running jobs; return the ones no longer held."""

    def finish(self, job_id: str, result: dict[str, Any], outcome: str | None) -> Job | None: ...  # noqa: D102

    def fail(self, job_id: str, error: JobError) -> Job | None: ...  # noqa: D102

    def cancel(self, job_id: str) -> Job | None: ...  # noqa: D102

    def cancel_requested(self, job_ids: Sequence[str]) -> set[str]: ...  # noqa: D102

    def cancelled(self, job_id: str) -> Job | None: ...  # noqa: D102

    def requeue(self, job_id: str, reason: str = "shutdown") -> Job | None: ...  # noqa: D102

    def recover(self) -> int: ...  # noqa: D102

    def append_events(  # noqa: D102
        self, events: Sequence[tuple[str, str, dict[str, Any], float]]
    ) -> None: ...

    def watch(self, job_id: str) -> PollWatch | NotifyWatch:
        """How an event stream of this job waits for its next events."""

    def open_cache(self) -> ResponseCache:
        """The response cache that lives beside the jobs."""

    def unwritable(self) -> str | None:
        """Why the database cannot take a write now (``/readyz``), or None."""

    def close(self) -> None: ...  # noqa: D102


def open_store(
    database: Path | str, *, lease: float | None = None, connections: int = 10
) -> JobBackend:
    """The store a parsed ``--database`` names: a ``Path`` is SQLite, a ``str`` a URL.

    ``lease``: seconds of a PostgreSQL claim (None: its default); SQLite has no leases.
    ``connections``: the most a PostgreSQL store's pool opens (the app's routes call the
    store from many threads; a runner from two).
    """
    if isinstance(database, Path):
        from debate.service._store import JobStore

        return JobStore(database)
    from debate.service._pgstore import DEFAULT_LEASE_S, PgJobStore

    lease = DEFAULT_LEASE_S if lease is None else lease
    return PgJobStore(database, lease=lease, max_size=connections)
