"""The routes of the service's HTTP API, and what they need of the job store and runner.

The app depends on the store and the runner only through :class:`JobStoreLike` and
:class:`JobRunnerLike`, so a test (or an embedding program) can hand it others. Store
calls run in worker threads (``asyncio.to_thread``): SQLite may wait on its lock, and the
event loop must not. Calls on the runner stay on the event loop, which the runner runs on.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Protocol, TypeVar, cast

from fastapi import FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, StreamingResponse
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from debate.exceptions import ConfigurationError
from debate.judgments import Decided
from debate.records import CouncilResult, DebateResult, Outcome, RunConfig, validation_message
from debate.report import render_html
from debate.service._auth import Authenticator, AuthError, Caller
from debate.service._backend import JobStoreLike
from debate.service._feed import NotifyWatch, PollWatch
from debate.service._http import error_response, note
from debate.service._models import (
    FINAL,
    Accepted,
    CouncilRequest,
    DebateRequest,
    DecisionRequest,
    Job,
    JobError,
    JobKind,
    JobRequest,
    JobStatus,
    JobSummary,
    JudgementRequest,
    PanelOverrides,
    ServiceSettings,
)
from debate.service._requests import changes_panel, with_overrides
from debate.service._webhooks import WebhookSender, check_url, send_webhook

logger = logging.getLogger(__name__)

HEARTBEAT_S = 15.0
"""An SSE comment this often keeps proxies from closing a quiet event stream."""
POLL_S = 0.25
"""How often an event stream looks for new events on a store that cannot notify."""
NOTIFY_FALLBACK_S = 5.0
"""The longest a notified stream waits before it reads anyway (a lost NOTIFY costs this)."""
RETRY_AFTER_S = 5
"""``Retry-After`` of a 429: about how long a few queued jobs take to start."""
MAX_LIST = 1000
BEARER_NOTE = (
    "A token whose SHA-256 digest the server lists; a server without tokens takes none "
    "and listens on loopback only."
)

R = TypeVar("R", bound=BaseModel)


class JobRunnerLike(Protocol):
    """What the app needs of the runner (``debate.service._runner.JobRunner``)."""

    on_finished: Callable[[Job], Any] | None

    async def start(self) -> None: ...  # noqa: D102

    async def stop(self) -> None: ...  # noqa: D102

    def wake(self) -> None: ...  # noqa: D102

    def cancel(self, job_id: str) -> Job | None: ...  # noqa: D102


class ServiceError(Exception):
    """A refused request: its status, its error and any headers (``Retry-After``...)."""

    def __init__(self, status: int, error: JobError, headers: dict[str, str] | None = None):
        super().__init__(error.message)
        self.status, self.error, self.headers = status, error, headers


@dataclass
class Service:
    """The store, the runner and the request checks one app serves."""

    settings: ServiceSettings
    store: JobStoreLike
    runner: JobRunnerLike
    auth: Authenticator
    webhooks: WebhookSender | None
    allow_private_webhooks: bool = False
    heartbeat: float = HEARTBEAT_S
    database: Path | None = None
    config: RunConfig | None = None
    """The server's run config: a job's panel overrides are checked against it at submit."""
    running: bool = field(default=False)

    def share(self) -> int:
        """Jobs one token may have queued or running: its part of the queue bound."""
        limits = self.settings.limits
        tokens = max(1, len(self.auth.digests))
        return max(limits.per_token_concurrency, limits.queue_bound // tokens)

    async def finished(self, job: Job) -> None:
        """The runner's ``on_finished``: start the job's webhook, if it has one."""
        if self.webhooks is not None:
            await send_webhook(self.store, self.webhooks, job)


# -- errors ----------------------------------------------------------------------------------

STATUS_KINDS = {404: "not_found", 405: "method_not_allowed", 409: "conflict", 413: "too_large"}


def add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def service_error(request: Request, exc: ServiceError) -> JSONResponse:
        return error_response(exc.status, exc.error, exc.headers)

    @app.exception_handler(AuthError)
    async def auth_error(request: Request, exc: AuthError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return error_response(exc.status, exc.error, headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"] if p not in ("query", "header", "path"))
        message = str(first["msg"]).removeprefix("Value error, ")
        error = JobError(kind="configuration", message=f"{where}: {message}", field=where)
        return error_response(422, error)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        kind = STATUS_KINDS.get(exc.status_code, "http")
        message = f"{request.method} {request.url.path}: {exc.detail}"
        return error_response(exc.status_code, JobError(kind=kind, message=message))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("unexpected error")
        error = JobError(kind="runtime", message="internal error; the server log has its trace")
        return error_response(500, error)


def _refuse(status: int, kind: str, message: str, field: str | None = None) -> ServiceError:
    return ServiceError(status, JobError(kind=kind, message=message, field=field))


async def _parse(request: Request, model: type[R]) -> R:
    """The body as ``model``; bad input is 422 naming the field, in the CLI's words."""
    raw = await request.body()
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        names = {name: name for name in model.model_fields}
        message = validation_message(exc, "body", names, bounds=model)
        loc = exc.errors()[0]["loc"]
        where = ".".join(str(p) for p in loc) or "body"
        raise _refuse(422, "configuration", message, where) from exc


# -- routes ----------------------------------------------------------------------------------

AuthHeader = Annotated[str | None, Header(alias="Authorization", include_in_schema=False)]
KeyHeader = Annotated[str | None, Header(alias="Idempotency-Key", max_length=200)]


class JobErrorBody(BaseModel):
    """Every error response: ``{"error": {...}}``."""

    error: JobError


class JobView(Job):
    """``Job`` as documented: ``result`` is the result record of the job's kind."""

    result: DebateResult | CouncilResult | Decided | None = None  # type: ignore[assignment]


ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": JobErrorBody, "description": text}
    for code, text in [
        (401, "No bearer token, or one not accepted"),
        (403, "The job belongs to another token"),
        (404, "No such job"),
        (409, "The job is not in a state for this"),
        (413, "Body over the server's limit"),
        (422, "Bad input: the field and the fix"),
        (429, "Queue full: retry after Retry-After seconds"),
    ]
}

SUBMITS: tuple[tuple[str, JobKind, type[BaseModel], str], ...] = (
    ("/v1/debates", "debate", DebateRequest, "Debate a topic and judge it"),
    ("/v1/judgements", "judgement", JudgementRequest, "Judge a transcript"),
    ("/v1/councils", "council", CouncilRequest, "Rank candidate answers to a question"),
    ("/v1/decisions", "decision", DecisionRequest, "Decide from recorded judgments"),
)


def add_job_routes(app: FastAPI, service: Service) -> None:
    for path, kind, model, summary in SUBMITS:
        _add_submit(app, service, path, kind, model, summary)

    @app.delete(
        "/v1/jobs/{job_id}", response_model=JobView, responses=ERRORS, summary="Cancel a job"
    )
    async def cancel_job(job_id: str, authorization: AuthHeader = None) -> JSONResponse:
        await _own_job(service, job_id, authorization)
        job = await asyncio.to_thread(service.runner.cancel, job_id)
        if job is None:
            raise _refuse(404, "not_found", f"job {job_id}: no such job")
        return JSONResponse(job.model_dump(mode="json"))


def _add_submit(
    app: FastAPI, service: Service, path: str, kind: JobKind, model: type[BaseModel], summary: str
) -> None:
    body = {"$ref": f"#/components/schemas/{model.__name__}"}

    async def submit(
        request: Request, authorization: AuthHeader = None, idempotency_key: KeyHeader = None
    ) -> JSONResponse:
        caller = service.auth.caller(authorization)
        note(token=caller.label)
        job_request = cast(JobRequest, await _parse(request, model))
        _check_overrides(service, job_request)
        await _check_webhook(service, getattr(job_request, "webhook", None))
        job = await _submit(service, kind, job_request, caller, idempotency_key)
        note(job=job.id)
        service.runner.wake()
        accepted = Accepted(
            id=job.id,
            status=job.status,
            href=f"/v1/jobs/{job.id}",
            events=f"/v1/jobs/{job.id}/events",
            report=f"/v1/jobs/{job.id}/report",
        )
        return JSONResponse(
            accepted.model_dump(mode="json"), status_code=202, headers={"Location": accepted.href}
        )

    app.post(
        path,
        status_code=202,
        response_model=Accepted,
        responses=ERRORS,
        summary=summary,
        name=f"submit_{kind}",
        openapi_extra={
            "requestBody": {"required": True, "content": {"application/json": {"schema": body}}}
        },
    )(submit)


def _check_overrides(service: Service, request: JobRequest) -> None:
    """422 for a panel the server cannot build (an unknown role, a bad threshold).

    The job would fail with the same message at run time; the client hears it from the POST.
    """
    overrides = getattr(request, "config", None)
    if service.config is None or not isinstance(overrides, PanelOverrides):
        return
    if not changes_panel(overrides):
        return  # the server's own config, checked when it started
    try:
        with_overrides(service.config, overrides, prefix="config.")
    except ConfigurationError as exc:
        raise _refuse(422, "configuration", str(exc), exc.field) from exc


async def _check_webhook(service: Service, url: str | None) -> None:
    if url is None:
        return
    if service.webhooks is None:
        raise _refuse(
            422,
            "configuration",
            "webhook: this server has no webhook secret to sign with; leave webhook out, "
            "or start the server with --webhook-secret-env NAME",
            "webhook",
        )
    try:
        await asyncio.to_thread(check_url, url, allow_private=service.allow_private_webhooks)
    except ConfigurationError as exc:
        raise _refuse(422, "configuration", str(exc), "webhook") from exc


async def _submit(
    service: Service, kind: JobKind, request: JobRequest, caller: Caller, key: str | None
) -> Job:
    """Queue the job in one store call (one transaction).

    The retry lookup, the room check and the insert happen together: the queue bound
    cannot be overshot by concurrent POSTs, and a retried POST of an accepted job gets its
    job even once the queue is full.
    """
    room = (service.settings.limits.queue_bound, service.share())
    try:
        job, _created = await asyncio.to_thread(
            lambda: service.store.submit(
                kind, request, token=caller.digest, idempotency_key=key, room=room
            )
        )
    except ValueError as exc:  # IdempotencyConflict (409), QueueFull (429): their JobError
        error = getattr(exc, "error", None)
        if not isinstance(error, JobError):
            raise
        status = int(getattr(exc, "status", 409))
        headers = {"Retry-After": str(RETRY_AFTER_S)} if status == 429 else None
        raise ServiceError(status, error, headers) from exc
    return job


async def _own_job(service: Service, job_id: str, authorization: str | None) -> Job:
    """The job, if the caller may see it (401, 404, 403 otherwise)."""
    caller = service.auth.caller(authorization)
    note(token=caller.label, job=job_id)
    job = await asyncio.to_thread(service.store.get, job_id)
    if job is None:
        raise _refuse(404, "not_found", f"job {job_id}: no such job; list yours at /v1/jobs")
    if caller.digest is not None and not await asyncio.to_thread(
        service.store.owns, job_id, caller.digest
    ):
        raise AuthError(403, f"job {job_id}: submitted with another token; use that token")
    return job


EVENT_REF = "#/components/schemas/JobEvent"
EVENT_STREAM: dict[str, Any] = {
    "description": "One SSE message per event: ``id`` its seq, ``event`` its "
    "type, ``data`` the JobEvent as JSON; comments are heartbeats",
    "content": {"text/event-stream": {"schema": {"$ref": EVENT_REF}}},
}
"""The answer of ``GET /v1/jobs/{job_id}/events`` as the OpenAPI document describes it."""


def add_read_routes(app: FastAPI, service: Service) -> None:
    @app.get(
        "/v1/jobs",
        response_model=list[JobSummary],
        responses=ERRORS,
        summary="Your jobs, newest first: each one's topic and verdict (the whole job at href)",
    )
    async def list_jobs(
        limit: Annotated[int, Query(ge=1, le=MAX_LIST)] = 100,
        status: Annotated[JobStatus | None, Query(description="Only jobs in this status")] = None,
        outcome: Annotated[Outcome | None, Query(description="Only jobs with this outcome")] = None,
        authorization: AuthHeader = None,
    ) -> JSONResponse:
        caller = service.auth.caller(authorization)
        note(token=caller.label)
        jobs = await asyncio.to_thread(
            lambda: service.store.summaries(limit, caller.digest, status=status, outcome=outcome)
        )
        return JSONResponse([job.model_dump(mode="json") for job in jobs])

    @app.get("/v1/jobs/{job_id}", response_model=JobView, responses=ERRORS, summary="A job")
    async def get_job(job_id: str, authorization: AuthHeader = None) -> JSONResponse:
        job = await _own_job(service, job_id, authorization)
        return JSONResponse(job.model_dump(mode="json"))

    @app.get(
        "/v1/jobs/{job_id}/events",
        responses={**ERRORS, 200: EVENT_STREAM},
        response_class=StreamingResponse,
        summary="A job's events (Server-Sent Events)",
    )
    async def job_events(
        job_id: str,
        after: Annotated[int | None, Query(ge=0)] = None,
        last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
        authorization: AuthHeader = None,
    ) -> StreamingResponse:
        await _own_job(service, job_id, authorization)
        start = _resume_from(last_event_id, after)
        return StreamingResponse(
            _event_stream(service, job_id, start),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    @app.get(
        "/v1/jobs/{job_id}/report",
        response_class=HTMLResponse,
        responses=ERRORS,
        summary="The HTML report of a done job",
    )
    async def job_report(job_id: str, authorization: AuthHeader = None) -> HTMLResponse:
        job = await _own_job(service, job_id, authorization)
        return HTMLResponse(_report(job))


def _resume_from(last_event_id: str | None, after: int | None) -> int:
    """The seq to stream after: ``Last-Event-ID`` (a reconnecting browser's) or ``after``."""
    if last_event_id is not None:
        if not last_event_id.strip().isdigit():
            raise _refuse(
                422,
                "configuration",
                "Last-Event-ID: not an event number; send the id of the last event received",
                "Last-Event-ID",
            )
        return int(last_event_id)
    return after or 0


async def _event_stream(service: Service, job_id: str, after: int) -> AsyncIterator[str]:
    """The job's events after ``after``, then new ones as they come, until the job is final.

    The job's status is read before its events: a job's last event is written with its
    final status, so once a final status was read, the events read next include the last.
    Between reads the stream waits on the store's watch of the job: a poll on SQLite, a
    NOTIFY from whichever replica runs the job on PostgreSQL (cleared before each read, so
    a notification during a read is not lost).
    """
    quiet_since = time.monotonic()
    with _watch(service.store, job_id) as watch:
        while True:
            watch.clear()
            job = await asyncio.to_thread(service.store.get, job_id)
            events = await asyncio.to_thread(service.store.events, job_id, after)
            for event in events:
                yield f"id: {event.seq}\nevent: {event.type}\ndata: {event.model_dump_json()}\n\n"
                after = event.seq
            if events:
                quiet_since = time.monotonic()
            if job is None or job.status in FINAL or not service.running:
                return
            if time.monotonic() - quiet_since >= service.heartbeat:
                yield ": keep-alive\n\n"
                quiet_since = time.monotonic()
            left = service.heartbeat - (time.monotonic() - quiet_since)
            await watch.wait(max(0.01, min(left, NOTIFY_FALLBACK_S)))


def _watch(store: JobStoreLike, job_id: str) -> PollWatch | NotifyWatch:
    """The store's watch of a job; a polling one for a store without ``watch``."""
    watch = getattr(store, "watch", None)
    return PollWatch(POLL_S) if watch is None else cast(PollWatch | NotifyWatch, watch(job_id))


REPORTS: dict[JobKind, type[BaseModel]] = {
    "debate": DebateResult,
    "judgement": DebateResult,
    "council": CouncilResult,
}


def _report(job: Job) -> str:
    """The HTML report of a done debate, judgement or council (409 otherwise)."""
    if job.status != "done" or job.result is None:
        raise _refuse(
            409, "conflict", f"job {job.id}: {job.status}, not done; the report comes when it is"
        )
    record = REPORTS.get(job.kind)
    if record is None:
        raise _refuse(
            409,
            "conflict",
            f"job {job.id}: a {job.kind} job has no HTML report; read its result at "
            f"/v1/jobs/{job.id}",
        )
    return render_html(record.model_validate(job.result))


def add_health_routes(app: FastAPI, service: Service) -> None:
    @app.get("/healthz", summary="The process is up")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", summary="The database is writable and the runner running")
    async def readyz() -> JSONResponse:
        problem = None if service.running else "runner: not running"
        check = getattr(service.store, "unwritable", None)
        if problem is None and check is not None:
            problem = await asyncio.to_thread(check)
        if problem is not None:
            return error_response(503, JobError(kind="not_ready", message=problem))
        return JSONResponse({"status": "ready"})
