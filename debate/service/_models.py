"""What crosses the service's boundary: job requests, jobs, events, errors, its settings.

The HTTP API, the job store, the runner, the MCP server and the page all speak these
models, and the OpenAPI document is generated from them, so the documented shape and the
served shape cannot drift apart. Results are the package's own records (``DebateResult``,
``CouncilResult``, ``Decided``), as ``result.json`` and ``debate decide`` write them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from debate._shares import share
from debate.records import Frozen, Transcript

JobKind = Literal["debate", "judgement", "council", "decision"]
JobStatus = Literal["queued", "running", "done", "failed", "cancelled"]
FINAL: tuple[JobStatus, ...] = ("done", "failed", "cancelled")


class PanelOverrides(Frozen):
    """What a client may change of the server's panel for one job.

    Endpoints, base URLs, API keys, templates and file paths are the server's alone: a
    client must never point the server's keys at another host or make it read a file.
    """

    judges: list[str] | None = None
    """Roles, e.g. ["technical", "risk"]."""
    arguments: int | None = Field(default=None, ge=1, le=10)
    rounds: int | None = Field(default=None, ge=0, le=5)
    seed: int | None = Field(default=None, ge=0, le=2**32 - 1)
    thresholds: dict[str, float] | None = None
    """Keys of ``Thresholds`` (alpha, kappa, variance, gap, split_share, confidence,
    min_spread)."""


class DebateRequest(Frozen):
    """``POST /v1/debates``: debate a topic and judge it."""

    topic: str = Field(min_length=1, max_length=2000)
    config: PanelOverrides = Field(default_factory=PanelOverrides)
    webhook: str | None = None
    """URL to POST the finished job to (signed, see ``X-Debate-Signature``)."""


class JudgementRequest(Frozen):
    """``POST /v1/judgements``: judge a transcript written anywhere."""

    transcript: Transcript
    config: PanelOverrides = Field(default_factory=PanelOverrides)
    webhook: str | None = None


class CouncilCandidate(Frozen):
    id: str = Field(min_length=1, max_length=200)
    text: str = Field(min_length=1)
    model: str | None = None


class CouncilRequest(Frozen):
    """``POST /v1/councils``: rank candidate answers to a question."""

    question: str = Field(min_length=1, max_length=2000)
    candidates: list[CouncilCandidate] = Field(min_length=2, max_length=50)
    config: PanelOverrides = Field(default_factory=PanelOverrides)
    webhook: str | None = None


class DecisionRequest(Frozen):
    """``POST /v1/decisions``: decide from recorded judgments (no model calls).

    ``rows`` are the tidy table's rows (docs/judgments.md) as JSON objects.
    """

    rows: list[dict[str, Any]] = Field(min_length=1)
    scale: str | None = None
    """``"1-5"``: required for score rows."""
    weights: Literal["equal", "latent"] | dict[str, float] = "equal"
    dimension: str | None = None
    seed: int = Field(default=0, ge=0, le=2**32 - 1)
    webhook: str | None = None


JobRequest = DebateRequest | JudgementRequest | CouncilRequest | DecisionRequest
REQUESTS: dict[str, type[JobRequest]] = {
    "debate": DebateRequest,
    "judgement": JudgementRequest,
    "council": CouncilRequest,
    "decision": DecisionRequest,
}
"""The request model of each job kind (a stored request is read back by its job's kind)."""


class JobError(Frozen):
    """Why a job failed, or why a request was refused (the CLI's error kinds and messages)."""

    kind: str
    """``configuration``, ``provider``, ``runtime``, ``auth``, ``rate_limit``, ``not_found``,
    ``too_large``, ``cancelled``..."""
    message: str
    field: str | None = None


class JobHead(Frozen):
    """What names a job in every view of it: its id, its kind and where it stands.

    The full job and its list summary both start with these fields (the base's fields come
    first, so the JSON keeps its order).
    """

    id: str
    kind: JobKind
    status: JobStatus


class Job(JobHead):
    """A job as ``GET /v1/jobs/{id}`` returns it."""

    created: float
    started: float | None = None
    finished: float | None = None
    outcome: str | None = None
    """The decision's outcome (debate, judgement), or None."""
    result: dict[str, Any] | None = None
    """When done: the result record as JSON (DebateResult, CouncilResult or Decided)."""
    error: JobError | None = None
    events: int = 0
    """Events recorded so far (``GET /v1/jobs/{id}/events``)."""


class Accepted(Frozen):
    """``202`` body: the job id and where to watch it."""

    id: str
    status: JobStatus
    href: str
    events: str
    report: str


class JobSummary(JobHead):
    """One job as ``GET /v1/jobs`` lists it: what tells it apart, without its result.

    A person picking a job from a list needs its topic and verdict, not its transcript
    (tens of kB each); the whole job is at ``href``. ``topic`` and ``question`` are the
    client's text, cut to ``SUBJECT_CHARS`` characters (ending "…" when cut).
    """

    topic: str | None = None
    """The debated topic (debate; judgement: its transcript's)."""
    question: str | None = None
    """The question a council ranked answers to."""
    outcome: str | None = None
    """The decision's outcome (debate, judgement), or None."""
    winner: str | None = None
    """The winning side when the outcome names one (``PRO``/``CON``), or None."""
    error: JobError | None = None
    """Why the job failed (its message cut as the topic is)."""
    created: float
    started: float | None = None
    finished: float | None = None
    href: str
    """The whole job, result included: ``GET`` it."""
    events: str
    """The job's event stream (links named as in ``Accepted``)."""
    report: str | None = None
    """The HTML report once done (None for a kind without one: decision)."""


class JobEvent(Frozen):
    """One progress event of a job, as stored and as sent over Server-Sent Events.

    ``type`` is the package's event type (``plan``, ``start``, ``retry``, ``finish``) or
    the job's own (``queued``, ``running``, ``done``, ``failed``, ``cancelled``); ``seq``
    counts from 1 per job, so a client that reconnects with ``Last-Event-ID`` misses none.
    """

    job: str
    seq: int = Field(ge=1)
    type: str
    time: float
    data: dict[str, Any] = Field(default_factory=dict)


class ServiceLimits(Frozen):
    max_body_bytes: int = Field(default=2_000_000, ge=1024)
    per_token_concurrency: int = Field(default=4, ge=1)
    queue_bound: int = Field(default=1000, ge=1)
    """Jobs queued or running at once; beyond it a POST gets 429 with Retry-After."""
    workers: int = Field(default=64, ge=1)
    """Jobs run at once across all tokens."""
    header_timeout_s: float = Field(default=10.0, gt=0, le=3600)
    """Seconds a request's headers may take to arrive (from the connection, or the
    request's first byte); then 408 and the connection is closed."""
    body_timeout_s: float = Field(default=60.0, gt=0, le=3600)
    """Seconds a request's body may take to arrive after its headers (a body of
    ``max_body_bytes`` at the default limits needs 33 kB/s); then 408 and the connection is
    closed."""
    lease_s: float = Field(default=30.0, ge=0.5, le=3600)
    """PostgreSQL: seconds a replica's claim on a job holds without renewal (renewed every
    third of it); a killed replica's jobs are taken over this long after its last renewal."""
    runners: int = Field(default=1, ge=1, le=256)
    """``debate serve``: processes running jobs, ``workers`` split among them. One process
    runs every job's Python on one core; with two or more, jobs use the machine's other
    cores (see :mod:`debate.service._process`)."""

    @field_validator("runners")
    @classmethod
    def _runners_have_workers(cls, value: int, info: ValidationInfo) -> int:
        workers = info.data.get("workers")
        if workers is not None and value > workers:
            raise ValueError(
                f"{value} runner processes need at least one worker each, and workers is "
                f"{workers}; give at most {workers} runners, or more workers"
            )
        return value

    def split_workers(self) -> list[int]:
        """Each runner process's share of ``workers``: as equal as they divide."""
        return [share(self.workers, self.runners, k) for k in range(self.runners)]


class ServiceSettings(Frozen):
    """``debate serve`` / ``debate mcp`` settings (flags, or ``[service]`` of the config)."""

    database: str = "debate-service.sqlite"
    """SQLite (WAL) file, or a ``postgresql://`` URL, holding jobs, events and the response
    cache."""
    token_hashes: list[str] = Field(default_factory=list)
    """SHA-256 hex digests of the accepted bearer tokens (also ``DEBATE_SERVICE_TOKENS``,
    comma-separated digests). Empty: no auth, and the server binds 127.0.0.1 only."""
    webhook_secret_env: str | None = None
    """Environment variable holding the HMAC-SHA256 key for webhook signatures."""
    limits: ServiceLimits = Field(default_factory=ServiceLimits)
