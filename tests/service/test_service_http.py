"""The HTTP API, driven over HTTP: the real app on uvicorn on 127.0.0.1, httpx as the client.

Jobs run on the package's test doubles. Until the SQLite job store and runner land in this
branch, the app is given a small in-memory store and runner (below) that keep their
contract: owner kept as a digest, idempotent submits, numbered events, cancel; the tests
marked for the real ones run when ``debate.service._runner`` is importable.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import io
import json
import logging
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from openapi_spec_validator import validate

from debate.api import judge_transcript, run_debate
from debate.council import run_council
from debate.exceptions import ConfigurationError
from debate.judgments import decide_judgments
from debate.models.test import TestModel
from debate.records import Candidate, DebateResult, RunConfig
from debate.runtime import Event, Run, event_record
from debate.service import log_handler, token_digest
from debate.service._app import create_app, openapi_document
from debate.service._models import (
    FINAL,
    CouncilRequest,
    DebateRequest,
    DecisionRequest,
    Job,
    JobError,
    JobEvent,
    JobKind,
    JobRequest,
    JobSummary,
    JudgementRequest,
    ServiceLimits,
    ServiceSettings,
)
from debate.service._summary import job_summary
from debate.service._webhooks import SIGNATURE_HEADER, TIMESTAMP_HEADER, check_url, verify
from tests.support import ROOT
from tests.support.helpers import transcript

TOKEN_A = "tok-A-7f3c9a1e5b2d4c6a8e0f"
TOKEN_B = "tok-B-1a2b3c4d5e6f7a8b9c0d"
SECRET = "webhook-secret-123"
TOPIC = "Should we adopt the plan?"
CONFIG = RunConfig(arguments=1, rounds=0)


# --- an in-memory stand-in for the job store and runner -------------------------------------


@dataclass
class _Row:
    job: Job
    request: JobRequest
    owner: str
    key: str | None
    events: list[JobEvent] = field(default_factory=list)


class MemoryStore:
    """The JobStore contract, in memory; owners are kept as a hash of the digest."""

    def __init__(self) -> None:
        self.rows: dict[str, _Row] = {}
        self.lock = threading.Lock()
        self.count = 0

    @staticmethod
    def _owner(token: str | None) -> str:
        return hashlib.sha256(token.encode()).hexdigest()[:16] if token else ""

    def submit(
        self,
        kind: JobKind,
        request: JobRequest,
        *,
        token: str | None,
        idempotency_key: str | None,
        room: tuple[int, int] | None = None,
    ) -> tuple[Job, bool]:
        owner = self._owner(token)
        with self.lock:
            for row in self.rows.values():
                if idempotency_key and (row.owner, row.key) == (owner, idempotency_key):
                    if row.request != request:
                        error = JobError(kind="conflict", message="Idempotency-Key: reused")
                        raise _Conflict(error)
                    return row.job, False
            if room is not None:
                active = [r for r in self.rows.values() if r.job.status in ("queued", "running")]
                if len(active) >= room[0] or (
                    owner and sum(r.owner == owner for r in active) >= room[1]
                ):
                    raise _Full(JobError(kind="rate_limit", message="queue: full; retry later"))
            self.count += 1
            job = Job(id=f"J{self.count:04d}", kind=kind, status="queued", created=time.time())
            self.rows[job.id] = _Row(job, request, owner, idempotency_key)
            self._event(job.id, "queued", {"kind": kind})
            return self.rows[job.id].job, True

    def _event(self, job_id: str, type_: str, data: dict[str, Any]) -> JobEvent:
        row = self.rows[job_id]
        event = JobEvent(
            job=job_id, seq=len(row.events) + 1, type=type_, time=time.time(), data=data
        )
        row.events.append(event)
        row.job = row.job.model_copy(update={"events": event.seq})
        return event

    def append_event(self, job_id: str, type_: str, data: dict[str, Any]) -> JobEvent:
        with self.lock:
            return self._event(job_id, type_, data)

    def set(self, job_id: str, event: str, data: dict[str, Any], **update: Any) -> Job:
        with self.lock:
            row = self.rows[job_id]
            row.job = row.job.model_copy(update=update)
            self._event(job_id, event, data)
            return row.job

    def get(self, job_id: str) -> Job | None:
        with self.lock:
            row = self.rows.get(job_id)
            return None if row is None else row.job

    def request(self, job_id: str) -> JobRequest | None:
        return self.rows[job_id].request if job_id in self.rows else None

    def owns(self, job_id: str, token: str | None) -> bool:
        return job_id in self.rows and self.rows[job_id].owner == self._owner(token)

    def list(self, limit: int = 100, token: str | None = None) -> list[Job]:
        with self.lock:
            rows = [r for r in self.rows.values() if token is None or r.owner == self._owner(token)]
            return [r.job for r in reversed(rows)][:limit]

    def summaries(
        self,
        limit: int = 100,
        token: str | None = None,
        *,
        status: str | None = None,
        outcome: str | None = None,
    ) -> list[JobSummary]:
        jobs = [j for j in self.list(10**6, token) if status in (None, j.status)]
        jobs = [j for j in jobs if outcome in (None, j.outcome)]
        return [job_summary(job, self.request(job.id)) for job in jobs[:limit]]

    def active(self, token: str | None = None) -> int:
        jobs = self.list(10**6, token)
        return sum(j.status in ("queued", "running") for j in jobs)

    def events(self, job_id: str, after: int = 0) -> list[JobEvent]:
        with self.lock:
            return [e for e in self.rows[job_id].events if e.seq > after]


class _Conflict(ValueError):
    status = 409

    def __init__(self, error: JobError) -> None:
        super().__init__(error.message)
        self.error = error


class _Full(_Conflict):
    status = 429


class MemoryRunner:
    """Runs queued jobs on TestModel through the package API; ``hold`` keeps them queued."""

    def __init__(self, store: MemoryStore, *, hold: bool = False, delay: float = 0.0) -> None:
        self.store = store
        self.hold = hold
        self.delay = delay
        self.on_finished: Callable[[Job], Any] | None = None
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.loop_task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.loop_task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        for task in [self.loop_task, *self.tasks.values()]:
            if task is not None:
                task.cancel()

    def wake(self) -> None:
        pass

    def cancel(self, job_id: str) -> Job | None:
        job = self.store.get(job_id)
        if job is None or job.status in FINAL:
            return job
        if job_id in self.tasks:
            self.tasks[job_id].cancel()
        error = JobError(kind="cancelled", message="cancelled by the client")
        return self.store.set(job_id, "cancelled", {}, status="cancelled", error=error)

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(0.05)
            if self.hold:
                continue
            for job in self.store.list(10**6):
                if job.status == "queued" and job.id not in self.tasks:
                    self.tasks[job.id] = asyncio.create_task(self._run(job.id))

    async def _run(self, job_id: str) -> None:
        self.store.set(job_id, "running", {}, status="running", started=time.time())
        request = self.store.request(job_id)
        assert request is not None
        try:
            await asyncio.sleep(self.delay)
            result, outcome = await self._execute(job_id, request)
        except asyncio.CancelledError:
            return
        done = self.store.set(
            job_id, "done", {}, status="done", result=result, outcome=outcome, finished=time.time()
        )
        if self.on_finished is not None:
            await self.on_finished(done)

    async def _execute(self, job_id: str, request: JobRequest) -> tuple[dict[str, Any], str | None]:
        def record(event: Event) -> None:
            data = event_record(event)
            self.store.append_event(job_id, data.pop("type"), data)

        shared: dict[str, Any] = {"config": CONFIG, "model": TestModel(seed=1), "seed": 7}
        if isinstance(request, DebateRequest):
            result = await run_debate(request.topic, run=Run(on_event=record), **shared)
        elif isinstance(request, JudgementRequest):
            result = await judge_transcript(request.transcript, run=Run(on_event=record), **shared)
        elif isinstance(request, CouncilRequest):
            cands = [Candidate(id=c.id, text=c.text) for c in request.candidates]
            council = await run_council(request.question, cands, **shared)
            return council.model_dump(mode="json"), None
        else:
            assert isinstance(request, DecisionRequest)
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / "rows.jsonl"
                path.write_text("".join(json.dumps(r) + "\n" for r in request.rows))
                decided = decide_judgments(path, scale=request.scale, seed=request.seed)
            return decided.model_dump(mode="json"), None
        return json.loads(result.model_dump_json()), result.decision.outcome


# --- the server ----------------------------------------------------------------------------


class Served:
    """An app on uvicorn in a thread, on a free port of 127.0.0.1.

    ``http``: the protocol class (``debate serve``'s, with its read timeouts), else uvicorn's.
    """

    def __init__(self, app: FastAPI, http: type[asyncio.Protocol] | None = None) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            app, log_config=None, access_log=False, lifespan="on", http=http or "auto"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]})

    def __enter__(self) -> Served:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


def settings(**limits: Any) -> ServiceSettings:
    return ServiceSettings(limits=ServiceLimits(**limits))


def serve(
    store: MemoryStore | None = None,
    runner: MemoryRunner | None = None,
    *,
    tokens: bool = False,
    env: dict[str, str] | None = None,
    **kwargs: Any,
) -> tuple[Served, MemoryStore, MemoryRunner]:
    store = store or MemoryStore()
    runner = runner or MemoryRunner(store)
    environ = dict(env or {})
    if tokens:
        environ["DEBATE_SERVICE_TOKENS"] = f"{token_digest(TOKEN_A)},{token_digest(TOKEN_B)}"
    service_settings = kwargs.pop("service_settings", settings())
    app = create_app(
        service_settings, CONFIG, store=store, runner=runner, environ=environ, **kwargs
    )
    return Served(app), store, runner


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def wait_final(client: httpx.Client, job_id: str, headers: dict[str, str] | None = None) -> Any:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        job = client.get(f"/v1/jobs/{job_id}", headers=headers).json()
        if job["status"] in FINAL:
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not finish")


@pytest.fixture
def logs() -> Iterator[io.StringIO]:
    """The service's log lines, formatted as ``debate serve --log-format json`` does."""
    stream = io.StringIO()
    handler = log_handler("json", stream)
    root = logging.getLogger()
    old = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield stream
    root.removeHandler(handler)
    root.setLevel(old)


def parse_sse(text: str) -> list[dict[str, Any]]:
    events = []
    for block in text.split("\n\n"):
        lines = [line for line in block.split("\n") if line and not line.startswith(":")]
        if lines:
            fields = dict(line.split(": ", 1) for line in lines)
            events.append({**fields, "data": json.loads(fields["data"])})
    return events


# --- submitting and reading jobs -----------------------------------------------------------


def test_every_kind_of_job_is_accepted_runs_and_is_read_back() -> None:
    served, _, _ = serve()
    rows = [
        {"item": "p1", "option": opt, "judge": j, "dimension": "q", "score": s}
        for j in ("j1", "j2", "j3")
        for opt, s in (("a", 5), ("b", 1))
    ]
    bodies = {
        "/v1/debates": {"topic": "Should we adopt the plan?"},
        "/v1/judgements": {"transcript": json.loads(transcript().model_dump_json())},
        "/v1/councils": {
            "question": "Which answer?",
            "candidates": [{"id": "a", "text": "Yes."}, {"id": "b", "text": "No."}],
        },
        "/v1/decisions": {"rows": rows, "scale": "1-5"},
    }
    with served, httpx.Client(base_url=served.url) as client:
        for path, body in bodies.items():
            answer = client.post(path, json=body)
            assert answer.status_code == 202, answer.text
            accepted = answer.json()
            assert answer.headers["Location"] == accepted["href"] == f"/v1/jobs/{accepted['id']}"
            job = wait_final(client, accepted["id"])
            assert job["status"] == "done", job
            assert job["result"]
        listed = client.get("/v1/jobs").json()
        assert sorted(j["kind"] for j in listed) == ["council", "debate", "decision", "judgement"]
        decision = next(j for j in listed if j["kind"] == "decision")
        assert "result" not in decision  # a summary; the whole job is at its href
        assert client.get(decision["href"]).json()["result"]["decisions"][0]["winner"] == "a"
        assert client.get("/healthz").json() == {"status": "ok"}
        assert client.get("/readyz").status_code == 200


def test_job_list_is_summaries_filtered_by_status_and_outcome() -> None:
    served, _, _ = serve()
    long = json.loads(transcript(pro=5, con=5, topic="Judge the long one?").model_dump_json())
    for argument in long["arguments"]:
        argument["reasoning"] = "because " + "r" * 2000
    with served, httpx.Client(base_url=served.url) as client:
        ids = [
            client.post("/v1/debates", json={"topic": "Adopt the plan?"}).json()["id"],
            client.post("/v1/judgements", json={"transcript": long}).json()["id"],
        ]
        jobs = [wait_final(client, job_id) for job_id in ids]
        response = client.get("/v1/jobs")
        listed = {job["id"]: job for job in response.json()}
        by_status = client.get("/v1/jobs", params={"status": "done"}).json()
        none_queued = client.get("/v1/jobs", params={"status": "queued"}).json()
        outcome = jobs[1]["outcome"]
        by_outcome = client.get("/v1/jobs", params={"outcome": outcome}).json()
        names = ("status", "outcome")
        bad = {name: client.get("/v1/jobs", params={name: "finished"}) for name in names}
    assert len(json.dumps(jobs[1]["result"])) > 20_000  # the whole job carries its transcript
    assert len(response.content) < 2 * 2048  # its summary does not
    judged = listed[ids[1]]
    assert set(judged) == set(JobSummary.model_fields)
    assert judged["topic"] == "Judge the long one?" and judged["status"] == "done"
    assert judged["outcome"] == outcome and judged["href"] == f"/v1/jobs/{ids[1]}"
    assert judged["winner"] == (jobs[1]["result"]["decision"]["winner"])
    assert listed[ids[0]]["topic"] == "Adopt the plan?"
    assert {job["id"] for job in by_status} == set(ids) and none_queued == []
    assert ids[1] in {job["id"] for job in by_outcome}
    assert all(job["outcome"] == outcome for job in by_outcome)
    for name, answer in bad.items():
        assert answer.status_code == 422
        error = answer.json()["error"]
        assert error["field"] == name and error["message"].startswith(f"{name}: ")
    assert "'queued'" in bad["status"].json()["error"]["message"]
    assert "'too_close'" in bad["outcome"].json()["error"]["message"]


def test_report_is_the_html_of_a_done_debate_and_409_before() -> None:
    store = MemoryStore()
    served, _, runner = serve(store, MemoryRunner(store, hold=True))
    with served, httpx.Client(base_url=served.url) as client:
        job_id = client.post("/v1/debates", json={"topic": "Should we adopt the plan?"}).json()[
            "id"
        ]
        early = client.get(f"/v1/jobs/{job_id}/report")
        assert early.status_code == 409
        assert early.json()["error"]["kind"] == "conflict"
        runner.hold = False
        job = wait_final(client, job_id)
        report = client.get(f"/v1/jobs/{job_id}/report")
        assert report.status_code == 200
        assert report.headers["content-type"].startswith("text/html")
        assert report.text.startswith("<!DOCTYPE html>")
        result = DebateResult.model_validate(job["result"])
        assert result.topic in report.text


def test_unknown_job_and_unknown_route_are_json_404s() -> None:
    served, _, _ = serve()
    with served, httpx.Client(base_url=served.url) as client:
        for answer in (client.get("/v1/jobs/NOPE"), client.delete("/v1/jobs/NOPE")):
            assert answer.status_code == 404
            assert answer.json()["error"]["kind"] == "not_found"
        assert client.get("/v1/nothing").json()["error"]["kind"] == "not_found"


# --- auth ----------------------------------------------------------------------------------


def test_tokens_401_without_or_with_a_wrong_one_and_403_for_another_tokens_job(
    logs: io.StringIO,
) -> None:
    store = MemoryStore()
    served, _, _ = serve(store, MemoryRunner(store, hold=True), tokens=True)
    with served, httpx.Client(base_url=served.url) as client:
        for headers in ({}, {"Authorization": "Basic abc"}, bearer("not-a-token")):
            answer = client.post("/v1/debates", json={"topic": "T?"}, headers=headers)
            assert answer.status_code == 401
            assert answer.headers["WWW-Authenticate"] == "Bearer"
            assert answer.json()["error"]["field"] == "Authorization"
        mine = client.post("/v1/debates", json={"topic": "T?"}, headers=bearer(TOKEN_A))
        assert mine.status_code == 202
        job_id = mine.json()["id"]
        assert client.get(f"/v1/jobs/{job_id}", headers=bearer(TOKEN_A)).status_code == 200
        for method in ("GET", "DELETE"):
            other = client.request(method, f"/v1/jobs/{job_id}", headers=bearer(TOKEN_B))
            assert other.status_code == 403
            assert other.json()["error"]["kind"] == "auth"
        assert client.get(f"/v1/jobs/{job_id}/events", headers=bearer(TOKEN_B)).status_code == 403
        assert client.get("/v1/jobs", headers=bearer(TOKEN_B)).json() == []
        assert [j["id"] for j in client.get("/v1/jobs", headers=bearer(TOKEN_A)).json()] == [job_id]
        assert client.get("/v1/jobs").status_code == 401
    text = logs.getvalue()
    assert TOKEN_A not in text and TOKEN_B not in text and "not-a-token" not in text
    assert token_digest(TOKEN_A)[:8] in text  # the caller is told apart by its digest prefix
    assert all(TOKEN_A not in repr(vars(row)) for row in store.rows.values())


# --- bad input and limits ------------------------------------------------------------------


def test_bad_input_is_422_naming_the_field_as_the_cli_does() -> None:
    served, _, _ = serve()
    with served, httpx.Client(base_url=served.url) as client:
        answer = client.post("/v1/debates", json={"topic": "T?", "config": {"arguments": 20}})
        assert answer.status_code == 422
        error = answer.json()["error"]
        assert error["field"] == "config.arguments"
        assert error["message"].startswith("config.arguments: ")
        assert "10" in error["message"]
        missing = client.post("/v1/debates", json={}).json()["error"]
        assert missing["field"] == "topic"
        assert missing["message"] == "topic: Field required"
        extra = client.post("/v1/debates", json={"topic": "T", "model": "gpt-x"}).json()["error"]
        assert extra["field"] == "model"  # endpoints and models are the server's alone
        broken = client.post("/v1/debates", content=b"{not json")
        assert broken.status_code == 422
        assert broken.json()["error"]["message"].startswith("body: Invalid JSON")
        query = client.get("/v1/jobs", params={"limit": 0})
        assert query.status_code == 422
        assert query.json()["error"]["field"] == "limit"
        # A panel the server cannot build is refused at the POST, not found at run time.
        for path, body in (
            ("/v1/debates", {"topic": "T?", "config": {"judges": ["risk", "wizard"]}}),
            (
                "/v1/judgements",
                {
                    "transcript": json.loads(transcript().model_dump_json()),
                    "config": {"judges": ["wizard"]},
                },
            ),
        ):
            role = client.post(path, json=body)
            assert role.status_code == 422, path
            assert role.json()["error"]["field"] == "config.judges"
            assert role.json()["error"]["message"].startswith(
                "config.judges: unknown judge role 'wizard'"
            )
        gap = client.post(
            "/v1/debates", json={"topic": "T?", "config": {"thresholds": {"nope": 1}}}
        )
        assert gap.status_code == 422
        assert gap.json()["error"]["message"].startswith("config.thresholds.nope")
        assert client.get("/v1/jobs").json() == []  # nothing refused was queued


def test_a_body_over_the_limit_is_413_by_length_and_while_read() -> None:
    served, store, _ = serve(service_settings=settings(max_body_bytes=2048))
    big = {"topic": "x" * 1900, "config": {"judges": ["y" * 500]}}
    with served, httpx.Client(base_url=served.url) as client:
        answer = client.post("/v1/debates", json=big)
        assert answer.status_code == 413
        assert answer.json()["error"]["kind"] == "too_large"

        def chunks() -> Iterator[bytes]:  # no Content-Length: chunked transfer
            yield b'{"topic": "'
            for _ in range(10):
                yield b"x" * 500
            yield b'"}'

        streamed = client.post("/v1/debates", content=chunks())
        assert streamed.status_code == 413
    assert store.rows == {}


def test_queue_bound_and_token_share_are_429_with_retry_after() -> None:
    store = MemoryStore()
    served, _, _ = serve(
        store,
        MemoryRunner(store, hold=True),
        tokens=True,
        service_settings=settings(queue_bound=4, per_token_concurrency=1),
    )
    with served, httpx.Client(base_url=served.url) as client:
        keyed = {**bearer(TOKEN_A), "Idempotency-Key": "a-0"}
        codes = [client.post("/v1/debates", json={"topic": "T0?"}, headers=keyed)] + [
            client.post("/v1/debates", json={"topic": f"T{i}?"}, headers=bearer(TOKEN_A))
            for i in (1, 2)
        ]
        assert [c.status_code for c in codes] == [202, 202, 429]  # A's share: 4 // 2 tokens
        assert codes[2].headers["Retry-After"] == "5"
        assert codes[2].json()["error"]["kind"] == "rate_limit"
        for i in range(2):
            ok = client.post("/v1/debates", json={"topic": f"B{i}?"}, headers=bearer(TOKEN_B))
            assert ok.status_code == 202
        full = client.post("/v1/debates", json={"topic": "B9?"}, headers=bearer(TOKEN_B))
        assert full.status_code == 429
        assert "full" in full.json()["error"]["message"]
        # A retried POST of an accepted job gets its job, full queue or not.
        retried = client.post("/v1/debates", json={"topic": "T0?"}, headers=keyed)
        assert retried.status_code == 202 and retried.json()["id"] == codes[0].json()["id"]


def test_idempotency_key_returns_the_same_job_and_409_for_another_body() -> None:
    store = MemoryStore()
    served, _, _ = serve(store, MemoryRunner(store, hold=True))
    key = {"Idempotency-Key": "order-42"}
    with served, httpx.Client(base_url=served.url) as client:
        first = client.post("/v1/debates", json={"topic": "T?"}, headers=key)
        again = client.post("/v1/debates", json={"topic": "T?"}, headers=key)
        assert first.status_code == again.status_code == 202
        assert first.json()["id"] == again.json()["id"]
        other = client.post("/v1/debates", json={"topic": "Other?"}, headers=key)
        assert other.status_code == 409
        fresh = client.post("/v1/debates", json={"topic": "T?"})
        assert fresh.json()["id"] != first.json()["id"]
    assert len(store.rows) == 2


def test_delete_cancels_a_queued_job() -> None:
    store = MemoryStore()
    served, _, _ = serve(store, MemoryRunner(store, hold=True))
    with served, httpx.Client(base_url=served.url) as client:
        job_id = client.post("/v1/debates", json={"topic": "T?"}).json()["id"]
        answer = client.delete(f"/v1/jobs/{job_id}")
        assert answer.status_code == 200
        assert answer.json()["status"] == "cancelled"
        assert client.get(f"/v1/jobs/{job_id}").json()["status"] == "cancelled"
        events = parse_sse(client.get(f"/v1/jobs/{job_id}/events").text)
        assert [e["event"] for e in events] == ["queued", "cancelled"]


# --- events --------------------------------------------------------------------------------


def test_events_stream_in_order_until_final_and_resume_misses_none() -> None:
    store = MemoryStore()
    served, _, _ = serve(store, MemoryRunner(store, delay=0.5), heartbeat=0.2)
    with served, httpx.Client(base_url=served.url, timeout=60) as client:
        job_id = client.post("/v1/debates", json={"topic": "Should we adopt the plan?"}).json()[
            "id"
        ]
        with client.stream("GET", f"/v1/jobs/{job_id}/events") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            text = "".join(stream.iter_text())
        events = parse_sse(text)
        seqs = [int(e["id"]) for e in events]
        assert seqs == list(range(1, len(seqs) + 1))
        assert [e["data"]["seq"] for e in events] == seqs
        assert events[0]["event"] == "queued" and events[-1]["event"] == "done"
        assert {"start", "finish"} <= {e["event"] for e in events}
        assert ": keep-alive" in text  # the job waited 0.5 s with no event; heartbeat 0.2 s
        middle = seqs[len(seqs) // 2]
        resumed = parse_sse(
            client.get(f"/v1/jobs/{job_id}/events", headers={"Last-Event-ID": str(middle)}).text
        )
        assert [int(e["id"]) for e in resumed] == seqs[middle:]
        after = parse_sse(client.get(f"/v1/jobs/{job_id}/events", params={"after": 2}).text)
        assert [int(e["id"]) for e in after] == seqs[2:]
        bad = client.get(f"/v1/jobs/{job_id}/events", headers={"Last-Event-ID": "x"})
        assert bad.status_code == 422


def test_reconnecting_mid_stream_with_last_event_id_misses_no_event() -> None:
    store = MemoryStore()
    served, _, _ = serve(store, MemoryRunner(store, delay=0.3))
    with served, httpx.Client(base_url=served.url, timeout=60) as client:
        job_id = client.post("/v1/debates", json={"topic": "Should we adopt the plan?"}).json()[
            "id"
        ]
        seen: list[int] = []
        with client.stream("GET", f"/v1/jobs/{job_id}/events") as stream:
            for line in stream.iter_lines():
                if line.startswith("id: "):
                    seen.append(int(line[4:]))
                    if len(seen) == 2:
                        break  # the connection drops after two events
        rest = client.get(f"/v1/jobs/{job_id}/events", headers={"Last-Event-ID": str(seen[-1])})
        seen += [int(e["id"]) for e in parse_sse(rest.text)]
        assert seen == list(range(1, store.get(job_id).events + 1))  # type: ignore[union-attr]


# --- webhooks ------------------------------------------------------------------------------


class Receiver:
    """A tiny webhook receiver on 127.0.0.1; answers 500 to the first ``fail`` posts."""

    def __init__(self, fail: int = 0) -> None:
        self.posts: list[tuple[dict[str, str], bytes]] = []
        self.fail = fail
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.posts.append((dict(self.headers), body))
                self.send_response(500 if len(receiver.posts) <= receiver.fail else 204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_webhook_is_signed_retried_and_verifies() -> None:
    receiver = Receiver(fail=1)
    served, _, _ = serve(
        env={"HOOK_SECRET": SECRET},
        service_settings=ServiceSettings(webhook_secret_env="HOOK_SECRET"),
        allow_private_webhooks=True,
    )
    try:
        with served, httpx.Client(base_url=served.url) as client:
            body = {"topic": "Should we adopt the plan?", "webhook": receiver.url}
            job_id = client.post("/v1/debates", json=body).json()["id"]
            wait_final(client, job_id)
            deadline = time.monotonic() + 10
            while len(receiver.posts) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
    finally:
        receiver.close()
    assert len(receiver.posts) == 2  # the first answer was 500: tried again
    headers, raw = receiver.posts[-1]
    assert verify(SECRET.encode(), raw, headers[SIGNATURE_HEADER])
    assert headers[SIGNATURE_HEADER] == (
        "sha256=" + hmac.new(SECRET.encode(), raw, hashlib.sha256).hexdigest()
    )
    assert abs(int(headers[TIMESTAMP_HEADER]) - time.time()) < 60
    job = json.loads(raw)
    assert (job["id"], job["status"]) == (job_id, "done")
    assert not verify(b"another secret", raw, headers[SIGNATURE_HEADER])


def test_webhooks_to_private_addresses_and_without_a_secret_are_refused() -> None:
    served, store, _ = serve(
        env={"HOOK_SECRET": SECRET},
        service_settings=ServiceSettings(webhook_secret_env="HOOK_SECRET"),
    )
    with served, httpx.Client(base_url=served.url) as client:
        for url in ("http://127.0.0.1:9/hook", "http://10.0.0.7/hook", "ftp://example.com/x"):
            answer = client.post("/v1/debates", json={"topic": "T?", "webhook": url})
            assert answer.status_code == 422, url
            assert answer.json()["error"]["field"] == "webhook"
        assert "--allow-private-webhooks" in answer.json()["error"]["message"] or url.startswith(
            "ftp"
        )
    unsigned, _, _ = serve()
    with unsigned, httpx.Client(base_url=unsigned.url) as client:
        answer = client.post("/v1/debates", json={"topic": "T?", "webhook": "https://x.org/h"})
        assert answer.status_code == 422
        assert "--webhook-secret-env" in answer.json()["error"]["message"]
    assert store.rows == {}


def test_check_url_refuses_names_that_resolve_inside() -> None:
    inside = {"intranet.example": ["192.168.1.10"], "public.example": ["93.184.216.34"]}
    assert check_url("https://public.example/h", allow_private=False, resolver=inside.__getitem__)
    with pytest.raises(Exception, match="private, loopback or reserved"):
        check_url("https://intranet.example/h", allow_private=False, resolver=inside.__getitem__)


# --- request ids and logs ------------------------------------------------------------------


def test_request_id_is_echoed_and_on_every_log_line_of_the_request(logs: io.StringIO) -> None:
    store = MemoryStore()
    served, _, _ = serve(store, MemoryRunner(store, hold=True))
    with served, httpx.Client(base_url=served.url) as client:
        answer = client.post(
            "/v1/debates", json={"topic": "T?"}, headers={"X-Request-ID": "req-abc.123"}
        )
        assert answer.headers["X-Request-ID"] == "req-abc.123"
        made = client.get("/healthz").headers["X-Request-ID"]
        assert len(made) == 16
        forged = client.get("/healthz", headers={"X-Request-ID": "a b\tc"}).headers["X-Request-ID"]
        assert forged != "a b\tc" and len(forged) == 16
    lines = [json.loads(line) for line in logs.getvalue().splitlines()]
    access = [line for line in lines if line["logger"] == "debate.service.access"]
    post = next(line for line in access if line.get("request_id") == "req-abc.123")
    assert (post["method"], post["path"], post["status"]) == ("POST", "/v1/debates", 202)
    assert post["job"] == answer.json()["id"] and post["ms"] >= 0
    assert any(line.get("request_id") == made for line in access)
    assert "T?" not in logs.getvalue()  # never a body


# --- the command and the document ----------------------------------------------------------


def test_openapi_document_is_current_valid_and_served() -> None:
    document = openapi_document()
    validate(document)
    checked_in = json.loads((ROOT / "docs" / "openapi.json").read_text())
    assert checked_in == document, "regenerate: python -m debate.service._app --openapi"
    assert document["openapi"].startswith("3.1")
    for name in ("DebateResult", "CouncilResult", "Decided", "DebateRequest", "JobEvent"):
        assert name in document["components"]["schemas"], name
    ref = document["paths"]["/v1/debates"]["post"]["requestBody"]["content"]["application/json"]
    assert ref["schema"] == {"$ref": "#/components/schemas/DebateRequest"}
    served, _, _ = serve()
    with served, httpx.Client(base_url=served.url) as client:
        assert client.get("/openapi.json").json() == document


def test_serve_refuses_a_public_host_without_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    from debate._cli.main import main

    assert main(["serve", "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --host: 0.0.0.0 would serve anyone without a token")
    assert len(err.strip().splitlines()) == 1


def test_serve_print_token_hash(capsys: pytest.CaptureFixture[str]) -> None:
    from debate._cli.main import main

    assert main(["serve", "--print-token-hash", TOKEN_A]) == 0
    assert capsys.readouterr().out.strip() == hashlib.sha256(TOKEN_A.encode()).hexdigest()


def test_serve_flags_reach_the_app_and_uvicorn(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import debate.service._app as app_module
    from debate._cli.main import main
    from debate.service._http import JsonLineFormatter

    made: list[dict[str, Any]] = []
    ran: list[dict[str, Any]] = []
    monkeypatch.setattr(
        app_module, "create_app", lambda *a, **k: made.append({"args": a, **k}) or "app"
    )
    monkeypatch.setattr(uvicorn, "run", lambda app, **k: ran.append({"app": app, **k}))
    monkeypatch.setenv("HOOK_SECRET", SECRET)
    monkeypatch.delenv("DEBATE_SERVICE_TOKENS", raising=False)
    (tmp_path / "panel.toml").write_text("arguments = 2\n")
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        argv = ["serve", "--host", "::1", "--port", "9123", "--database", "jobs.sqlite"]
        argv += ["--workers", "3", "--queue-bound", "7", "--per-token", "2"]
        argv += ["--max-body", "4096", "--webhook-secret-env", "HOOK_SECRET"]
        argv += ["--header-timeout", "3", "--body-timeout", "4.5"]
        argv += ["--allow-private-webhooks", "--log-format", "json"]
        argv += ["--config", str(tmp_path / "panel.toml"), "--model", "m"]
        argv += ["--base-url", "http://127.0.0.1:9/v1", "--api-key-env", ""]
        assert main(argv) == 0
        json_handler = root.handlers[0]
        assert main(["serve", "--model-path", str(tmp_path / "m.gguf")]) == 0
        text_handler = root.handlers[0]
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    settings_, config = made[0]["args"]
    limits = settings_.limits
    assert settings_.database == "jobs.sqlite"
    assert (limits.workers, limits.queue_bound, limits.per_token_concurrency) == (3, 7, 2)
    assert (limits.max_body_bytes, settings_.webhook_secret_env) == (4096, "HOOK_SECRET")
    assert (limits.header_timeout_s, limits.body_timeout_s) == (3.0, 4.5)
    assert (ran[0]["http"].header_timeout, ran[0]["http"].body_timeout) == (3.0, 4.5)
    assert (ran[1]["http"].header_timeout, ran[1]["http"].body_timeout) == (10.0, 60.0)
    assert made[0]["allow_private_webhooks"] is True and made[1]["allow_private_webhooks"] is False
    assert (config.arguments, config.model, config.base_url, config.api_key_env) == (
        2,
        "m",
        "http://127.0.0.1:9/v1",
        "",
    )
    assert made[1]["model_path"] == str(tmp_path / "m.gguf") and made[0]["model_path"] is None
    assert (ran[0]["host"], ran[0]["port"], ran[1]["host"], ran[1]["port"]) == (
        "::1",
        9123,
        "127.0.0.1",
        8765,
    )
    assert isinstance(json_handler.formatter, JsonLineFormatter)
    assert not isinstance(text_handler.formatter, JsonLineFormatter)


def test_serve_refuses_bad_values_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from debate._cli.main import main

    cases = [
        (["serve", "--max-body", "10"], "--max-body"),
        (["serve", "--webhook-secret-env", "UNSET_SECRET_VAR_19B"], "--webhook-secret-env"),
        (["serve", "--base-url", "http://127.0.0.1:9/v1"], "--model"),
    ]
    for argv, flag in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert flag in err and len(err.strip().splitlines()) == 1, err


def test_serve_refuses_runners_it_cannot_give_workers_or_a_rate_limit_each(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each runner process would keep an endpoint's rpm in full: refused, before the bind
    and before the database is made."""
    from debate._cli.main import main

    limited = tmp_path / "limited.toml"
    limited.write_text(
        '[endpoints.e]\nbase_url = "http://127.0.0.1:9/v1"\napi_key_env = ""\nrpm = 60\n'
    )
    monkeypatch.chdir(tmp_path)
    cases = [
        (["--runners", "3", "--workers", "2"], "--runners: 3 runner processes need at least"),
        (["--runners", "2", "--config", str(limited)], "--runners 2: endpoint e has rpm/tpm"),
    ]
    for argv, expected in cases:
        assert main(["serve", *argv, "--model", "scripted"]) == 2
        err = capsys.readouterr().err
        assert expected in err and len(err.strip().splitlines()) == 1, err
    assert list(tmp_path.iterdir()) == [limited], "refused before the database is made"


def test_runners_split_the_workers() -> None:
    assert ServiceLimits(workers=64, runners=2).split_workers() == [32, 32]
    assert ServiceLimits(workers=7, runners=3).split_workers() == [3, 2, 2]
    assert ServiceLimits(workers=5).split_workers() == [5]


def test_the_apps_own_runner_refuses_runners_it_would_not_start(tmp_path: Path) -> None:
    """``runners`` is ``debate serve``'s (RunnerProcess); the app's thread runner is one."""
    chosen = ServiceSettings(
        database=str(tmp_path / "jobs.sqlite"), limits=ServiceLimits(workers=4, runners=2)
    )
    with pytest.raises(ConfigurationError, match="runners: 2 runner processes"):
        create_app(chosen, CONFIG, make_models=lambda: None, environ={})


# --- the SQLite store and runner (when they are in the tree) --------------------------------


def real_app(database: Path, **limits: Any) -> FastAPI:
    from debate.service._runner import ModelBundle  # type: ignore[import-not-found,unused-ignore]

    environ = {"DEBATE_SERVICE_TOKENS": token_digest(TOKEN_A)}
    chosen = ServiceSettings(database=str(database), limits=ServiceLimits(**limits))
    return create_app(  # type: ignore[no-any-return,unused-ignore]
        chosen,
        CONFIG,
        make_models=lambda: ModelBundle(model=TestModel(seed=1, delay=0.05)),
        environ=environ,
    )


def test_real_store_keeps_no_token_and_a_restart_finishes_every_job(tmp_path: Path) -> None:
    database = tmp_path / "jobs.sqlite"
    first = Served(real_app(database))
    with first, httpx.Client(base_url=first.url, headers=bearer(TOKEN_A)) as client:
        assert client.get("/readyz").status_code == 200
        ids = [
            client.post("/v1/debates", json={"topic": f"{TOPIC} {i}"}).json()["id"]
            for i in range(3)
        ]
        time.sleep(0.3)  # some calls made, the jobs not finished: then the server stops
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert TOKEN_A.encode() not in raw and token_digest(TOKEN_A).encode() not in raw
    second = Served(real_app(database))
    with second, httpx.Client(base_url=second.url, headers=bearer(TOKEN_A)) as client:
        jobs = [wait_final(client, job_id, bearer(TOKEN_A)) for job_id in ids]
        assert [j["status"] for j in jobs] == ["done"] * 3
        report = client.get(f"/v1/jobs/{ids[0]}/report")
        assert report.status_code == 200 and report.text.startswith("<!DOCTYPE html>")


# --- slow clients: read timeouts, and the token before the body ----------------------------


@dataclass
class SlowClient:
    """A raw socket: sends ``head`` at once, then ``trickle`` a byte every ``gap`` seconds.

    Runs until the server hangs up or ``limit`` seconds pass: ``closed`` is when the server
    closed the connection, counted from the connect (None: it never did), ``answer`` every
    byte it sent back.
    """

    port: int
    head: bytes = b""
    trickle: bytes = b""
    gap: float = 0.2
    limit: float = 10.0
    closed: float | None = None
    answer: bytes = b""

    def run(self) -> None:
        with socket.create_connection(("127.0.0.1", self.port)) as sock:
            start, sent = time.monotonic(), 0
            sock.settimeout(self.gap)
            sock.sendall(self.head)
            while time.monotonic() - start < self.limit:
                try:
                    if sent < len(self.trickle):
                        sock.sendall(self.trickle[sent : sent + 1])
                        sent += 1
                    chunk = sock.recv(65536)
                except TimeoutError:
                    continue
                except OSError:  # reset or broken pipe: the server closed it
                    chunk = b""
                if not chunk:
                    self.closed = time.monotonic() - start
                    return
                self.answer += chunk


def post_head(token: str = TOKEN_A, length: int = 64) -> bytes:
    return (
        f"POST /v1/debates HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def timed(header: float, body: float) -> tuple[Served, MemoryStore]:
    """The app with tokens, on ``debate serve``'s protocol with these read timeouts."""
    from debate.service import http_protocol

    limits = ServiceLimits(header_timeout_s=header, body_timeout_s=body)
    store = MemoryStore()
    environ = {"DEBATE_SERVICE_TOKENS": token_digest(TOKEN_A)}
    chosen = ServiceSettings(limits=limits)
    app = create_app(chosen, CONFIG, store=store, runner=MemoryRunner(store), environ=environ)
    return Served(app, http=http_protocol(limits)), store


def test_slow_headers_and_slow_bodies_are_cut_off_with_408() -> None:
    served, store = timed(header=1.0, body=1.0)
    body = json.dumps({"topic": TOPIC}).encode()
    head = post_head(length=len(body))
    with served:
        slow_headers = [SlowClient(served.port, trickle=head) for _ in range(20)]
        silent = [SlowClient(served.port) for _ in range(5)]
        slow_bodies = [SlowClient(served.port, head=head, trickle=body) for _ in range(20)]
        clients = slow_headers + silent + slow_bodies
        threads = [threading.Thread(target=c.run) for c in clients]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        time.sleep(0.3)
        with httpx.Client(base_url=served.url) as healthy:  # others are served meanwhile
            assert healthy.get("/healthz").status_code == 200
        for thread in threads:
            thread.join(15)
        took = time.monotonic() - started
    assert took < 6.0  # every client was let go after about a second, not held open
    for client in clients:
        assert client.closed is not None and client.closed < 3.0, client
        part = "body" if client in slow_bodies else "headers"
        status, _, rest = client.answer.partition(b"\r\n")
        assert status == b"HTTP/1.1 408 Request Timeout", client.answer
        error = json.loads(rest.partition(b"\r\n\r\n")[2])["error"]
        assert (error["kind"], error["field"]) == ("timeout", part)
        assert error["message"].startswith(f"{part}: not received within 1 s")
    assert store.rows == {}  # no half body reached a route


def test_a_whole_request_in_time_is_not_cut_and_a_stream_outlives_the_timeouts() -> None:
    served, store = timed(header=0.5, body=0.5)
    with served, httpx.Client(base_url=served.url, headers=bearer(TOKEN_A)) as client:
        accepted = client.post("/v1/debates", json={"topic": TOPIC})
        assert accepted.status_code == 202
        job = accepted.json()["id"]
        time.sleep(1.0)  # the kept-alive connection idles past both timeouts
        assert client.get(f"/v1/jobs/{job}").status_code == 200
        with client.stream("GET", f"/v1/jobs/{job}/events") as events:
            assert events.status_code == 200
            assert "done" in "".join(events.iter_text())  # read to its end, past 0.5 s
    assert len(store.rows) == 1


def test_the_token_is_checked_before_a_byte_of_the_body_is_read() -> None:
    served, store = timed(header=5.0, body=5.0)
    answers = {}
    with served:
        for name, token in (("stranger", "not-a-token"), ("member", TOKEN_A)):
            with socket.create_connection(("127.0.0.1", served.port)) as sock:
                sock.sendall(post_head(token, length=1_000_000))  # headers only, no body
                sock.settimeout(1.0)
                try:
                    answers[name] = sock.recv(65536)
                except TimeoutError:
                    answers[name] = b""  # still waiting for the body it was promised
    assert answers["stranger"].startswith(b"HTTP/1.1 401 ")
    assert b'"field":"Authorization"' in answers["stranger"].replace(b" ", b"")
    assert b"connection: close" in answers["stranger"].lower()
    assert answers["member"] == b""  # a caller it accepts: its body is awaited, then read
    assert store.rows == {}
