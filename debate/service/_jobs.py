"""What both job stores share: ids, the refusals of a submit, and a job's row.

The SQLite :class:`~debate.service._store.JobStore` and the PostgreSQL
:class:`~debate.service._pgstore.PgJobStore` keep the same jobs in the same columns; what
they agree on lives here once, so that the two cannot drift apart.

Ids are ULIDs (26 Crockford base-32 characters: a millisecond timestamp, then 80 random
bits), so they sort by creation time across processes and reveal nothing but that time.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Iterable, Sequence
from typing import Any, get_args

from debate.records import draw_seed
from debate.service._models import (
    FINAL,
    REQUESTS,
    DecisionRequest,
    Job,
    JobError,
    JobRequest,
    JobStatus,
)

STATUSES: tuple[JobStatus, ...] = get_args(JobStatus)
COLUMNS = "id, kind, status, created, started, finished, outcome, result, error, events"
"""A job's columns, in the order :func:`row_job` reads them."""
FINALS = ",".join(f"'{status}'" for status in FINAL)
"""The final statuses as an SQL list (a final job keeps its end: first writer wins)."""
CANCELLED = JobError(kind="cancelled", message="cancelled by the client").model_dump_json()
"""The stored error of a job a client cancelled."""
Pending = tuple[str, str, dict[str, Any], float]
"""An event to write: ``(job, type, data, time)``."""
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


class IdempotencyConflict(ValueError):
    """A repeated ``Idempotency-Key`` with another request body (HTTP ``409``).

    The key names one request: answering a different body with the first one's job would
    hide the client's mistake, and running it would break the key's promise.
    """

    def __init__(self, job: Job) -> None:
        self.job = job
        """The job the key already names."""
        self.error = JobError(
            kind="conflict",
            message=f"Idempotency-Key: already used for job {job.id} with another request "
            "body; send the same body to get that job, or use a new key",
            field="Idempotency-Key",
        )
        super().__init__(self.error.message)

    status = 409


class QueueFull(ValueError):
    """No room for another job (HTTP ``429`` with ``Retry-After``).

    The queue is at its bound, or the token has its share of it. Checked inside the
    submit's transaction, so concurrent submits cannot overshoot the bound, and after the
    idempotency lookup, so a retried POST of an accepted job gets its job even when the
    queue has filled since.
    """

    status = 429

    def __init__(self, message: str) -> None:
        self.error = JobError(kind="rate_limit", message=message)
        super().__init__(message)


def check_share(total: int, mine: int, who: str, bound: int, share: int) -> None:
    """Refuse a submit when the queue has ``bound`` jobs or the token ``share`` of them."""
    if total >= bound:
        raise QueueFull(f"queue: full ({total} jobs queued or running); retry later")
    if who and mine >= share:
        raise QueueFull(
            f"queue: this token has {mine} jobs queued or running, its share; retry later"
        )


def new_id(now: float | None = None) -> str:
    """A ULID: 48 bits of milliseconds, 80 random bits, in 26 Crockford base-32 characters."""
    ms = int((time.time() if now is None else now) * 1000)
    value = (ms << 80) | secrets.randbits(80)
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


def token_id(token: str | None) -> str:
    """What the store keeps of a client's token: 16 hex digits of its SHA-256 ('' for none).

    The caller may pass the bearer token or its configured digest (always the same one), and
    the store never holds either.
    """
    if not token:
        return ""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()[:16]


def with_seed(request: JobRequest) -> JobRequest:
    """The request with its seed fixed (drawn now if the client gave none).

    A re-run after a crash must send the very requests the first run sent, so that the
    response cache answers the calls that had completed: the seed is part of every call's
    cache key, so it is chosen once, at submit, and stored with the job.
    """
    if isinstance(request, DecisionRequest) or request.config.seed is not None:
        return request
    config = request.config.model_copy(update={"seed": draw_seed()})
    return request.model_copy(update={"config": config})


def digest(request: JobRequest) -> str:
    """The SHA-256 of the request as the client sent it (an idempotency key's body)."""
    return hashlib.sha256(request.model_dump_json().encode("utf-8")).hexdigest()


def stored_request(kind: str, text: str) -> JobRequest:
    """A stored request, read back as the request model of its job's kind."""
    return REQUESTS[kind].model_validate_json(text)


def within_share(
    candidates: Iterable[tuple[str, str]], running: dict[str, int], per_token: int, limit: int
) -> list[str]:
    """The first ``limit`` candidate jobs whose token stays within its share of running jobs.

    ``candidates`` are ``(id, token)`` in claim order; a job counts toward its token's
    ``running`` as it is chosen (``running`` is updated). Both stores' claims use it: the
    order and the running counts are theirs, the rule is one.
    """
    chosen: list[str] = []
    for job_id, token in candidates:
        if token and running.get(token, 0) >= per_token:
            continue
        if token:
            running[token] = running.get(token, 0) + 1
        chosen.append(job_id)
        if len(chosen) == limit:
            break
    return chosen


def row_job(row: Sequence[Any]) -> Job:
    """A job from a row of :data:`COLUMNS` (either store's)."""
    return Job(
        id=row[0],
        kind=row[1],
        status=row[2],
        created=row[3],
        started=row[4],
        finished=row[5],
        outcome=row[6],
        result=None if row[7] is None else json.loads(row[7]),
        error=None if row[8] is None else JobError.model_validate_json(row[8]),
        events=row[9],
    )
