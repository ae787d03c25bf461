"""A job's summary for ``GET /v1/jobs``: its subject and verdict, read in the store's query.

The list a person picks a job from needs the topic (or question) and the outcome, not the
result record with its transcript (tens of kB a job). Both stores pick those few values
out of the stored request and result JSON inside the query (SQLite's ``json_extract``,
PostgreSQL's ``->>``), cut the client's text there, and filter by status and outcome
there, so a page of jobs moves a few hundred bytes a job from the database, not its
results. This module holds what both stores share: the extracted columns' order, the
cutting, and the links, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, get_args

from debate.records import Outcome
from debate.service._models import Job, JobError, JobRequest, JobStatus, JobSummary

SUBJECT_CHARS = 300
"""A listed topic, question or error message is cut to this many characters."""
STATUSES: tuple[str, ...] = get_args(JobStatus)
OUTCOMES: tuple[str, ...] = get_args(Outcome)

SQLITE_COLUMNS = (
    "id, kind, status, created, started, finished, outcome, error, "
    f"substr(COALESCE(json_extract(request, '$.topic'), "
    f"json_extract(request, '$.transcript.topic')), 1, {SUBJECT_CHARS + 1}), "
    f"substr(json_extract(request, '$.question'), 1, {SUBJECT_CHARS + 1}), "
    "json_extract(result, '$.decision.winner')"
)
"""A summary row on SQLite (``json_extract`` returns NULL where the path is absent)."""
PG_COLUMNS = (
    "id, kind, status, created, started, finished, outcome, error, "
    "left(COALESCE(request::json ->> 'topic', request::json #>> '{transcript,topic}'), "
    f"{SUBJECT_CHARS + 1}), "
    f"left(request::json ->> 'question', {SUBJECT_CHARS + 1}), "
    "result::json #>> '{decision,winner}'"
)
"""The same row on PostgreSQL (``request`` and ``result`` are JSON text columns)."""


def where_clause(
    placeholder: str, *, status: str | None, outcome: str | None, token: str | None
) -> tuple[str, list[Any]]:
    """The WHERE clause and its arguments for a listing's filters (``""`` for none).

    ``token`` is the stored token key (:func:`debate.service._store.token_id`), not the
    bearer token; both stores build their listing's filter here, with their placeholder.
    """
    terms: list[str] = []
    args: list[Any] = []
    for column, value in (("token", token), ("status", status), ("outcome", outcome)):
        if value is not None:
            terms.append(f"{column} = {placeholder}")
            args.append(value)
    return ("WHERE " + " AND ".join(terms) if terms else ""), args


def clip(text: str | None) -> str | None:
    """``text`` cut to ``SUBJECT_CHARS`` characters, ending "…" when it was longer."""
    if text is None or len(text) <= SUBJECT_CHARS:
        return text
    return text[: SUBJECT_CHARS - 1] + "…"


def row_summary(row: Sequence[Any]) -> JobSummary:
    """A summary from a row of ``SQLITE_COLUMNS`` or ``PG_COLUMNS``."""
    job_id, kind, status, created, started, finished, outcome, error, topic, question, winner = (
        tuple(row)
    )
    fault = None
    if error is not None:
        parsed = JobError.model_validate_json(error)
        fault = parsed.model_copy(update={"message": clip(parsed.message)})
    href = f"/v1/jobs/{job_id}"
    return JobSummary(
        id=job_id,
        kind=kind,
        status=status,
        topic=clip(topic),
        question=clip(question),
        outcome=outcome,
        winner=winner if isinstance(winner, str) else None,
        error=fault,
        created=created,
        started=started,
        finished=finished,
        href=href,
        events=href + "/events",
        report=None if kind == "decision" else href + "/report",
    )


def job_summary(job: Job, request: JobRequest | None) -> JobSummary:
    """The summary of a whole job and its request (a store that keeps them as objects)."""
    topic = getattr(request, "topic", None)
    transcript = getattr(request, "transcript", None)
    if topic is None and transcript is not None:
        topic = transcript.topic
    decision = (job.result or {}).get("decision")
    winner = decision.get("winner") if isinstance(decision, dict) else None
    error = None if job.error is None else job.error.model_dump_json()
    row = (job.id, job.kind, job.status, job.created, job.started, job.finished, job.outcome)
    return row_summary((*row, error, topic, getattr(request, "question", None), winner))
