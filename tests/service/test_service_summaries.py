"""``GET /v1/jobs``'s summaries from both job stores: subject, verdict, filters, size.

The same jobs go into the SQLite store and the PostgreSQL one (tests/support/pg_server.py's server;
skipped where it cannot start): both must pick the topic, question and winner out of the
stored JSON and filter in their query alike.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from debate.records import Transcript
from debate.service._backend import JobBackend
from debate.service._models import (
    CouncilCandidate,
    CouncilRequest,
    DebateRequest,
    DecisionRequest,
    JobError,
    JudgementRequest,
)
from debate.service._store import JobStore
from debate.service._summary import SUBJECT_CHARS
from tests.support.helpers import transcript

LONG = 2000
"""Characters of each argument's reasoning in the long transcript."""


def long_transcript(topic: str = "Judge the recorded debate?") -> Transcript:
    """A transcript of tens of kB: what a listed job must not carry."""
    short = transcript(pro=5, con=5, topic=topic)
    data = json.loads(short.model_dump_json())
    for argument in data["arguments"]:
        argument["reasoning"] = "because " + "r" * LONG
    return Transcript.model_validate(data)


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[JobBackend]:
    if request.param == "sqlite":
        backend: JobBackend = JobStore(tmp_path / "jobs.sqlite")
    else:
        pytest.importorskip("psycopg")
        from debate.service._pgstore import PgJobStore

        backend = PgJobStore(str(request.getfixturevalue("pg_url")), lease=5.0)
    yield backend
    backend.close()


def fill(store: JobBackend) -> dict[str, str]:
    """One job of each kind and state the list tells apart; their ids by name."""
    long_topic = "Should we " + "really " * 250 + "adopt it?"
    candidates = [CouncilCandidate(id="a", text="Yes."), CouncilCandidate(id="b", text="No.")]
    council = CouncilRequest(question="Which answer?", candidates=candidates)
    requests: dict[str, tuple[Any, Any, str | None]] = {
        "won": ("debate", DebateRequest(topic="Adopt the four-day week?"), "tok-a"),
        "close": ("debate", DebateRequest(topic=long_topic), "tok-a"),
        "judged": ("judgement", JudgementRequest(transcript=long_transcript()), "tok-a"),
        "council": ("council", council, None),
        "failed": ("decision", DecisionRequest(rows=[{"item": "x"}]), "tok-a"),
        "queued": ("debate", DebateRequest(topic="Still waiting?"), "tok-b"),
    }
    ids = {
        name: store.submit(kind, request, token=token, idempotency_key=None)[0].id
        for name, (kind, request, token) in requests.items()
    }
    claimed = {job.id for job, _ in store.claim(5)}
    assert claimed == {ids[n] for n in ("won", "close", "judged", "council", "failed")}
    record = long_transcript().model_dump(mode="json")
    store.finish(ids["won"], {"decision": {"outcome": "winner", "winner": "PRO"}}, "winner")
    store.finish(ids["close"], {"decision": {"outcome": "too_close", "winner": None}}, "too_close")
    judged = {"transcript": record, "decision": {"outcome": "winner", "winner": "CON"}}
    store.finish(ids["judged"], judged, "winner")
    store.finish(ids["council"], {"question": "Which answer?", "rankings": []}, None)
    store.fail(ids["failed"], JobError(kind="configuration", message="scale: " + "x" * 5000))
    return ids


def test_summaries_carry_subject_and_verdict_not_the_result(store: JobBackend) -> None:
    ids = fill(store)
    listed = {s.id: s for s in store.summaries()}
    assert [s.id for s in store.summaries()] == list(reversed(ids.values()))  # newest first
    won, close, judged = listed[ids["won"]], listed[ids["close"]], listed[ids["judged"]]
    assert (won.topic, won.status, won.outcome, won.winner) == (
        "Adopt the four-day week?",
        "done",
        "winner",
        "PRO",
    )
    assert close.outcome == "too_close" and close.winner is None
    assert close.topic is not None and len(close.topic) == SUBJECT_CHARS
    assert close.topic.startswith("Should we really") and close.topic.endswith("…")
    assert (judged.topic, judged.winner) == ("Judge the recorded debate?", "CON")
    council = listed[ids["council"]]
    assert (council.question, council.topic, council.outcome) == ("Which answer?", None, None)
    failed = listed[ids["failed"]]
    assert failed.status == "failed" and failed.error is not None
    assert failed.error.kind == "configuration" and len(failed.error.message) == SUBJECT_CHARS
    assert failed.report is None and failed.topic is None and failed.question is None
    assert won.href == f"/v1/jobs/{won.id}" and won.events == won.href + "/events"
    assert won.report == won.href + "/report"
    assert won.started is not None and won.finished is not None and won.created <= won.started
    # The judged job's result holds a long transcript; its summary does not.
    whole = store.get(ids["judged"])
    assert whole is not None and len(json.dumps(whole.result)) > 20_000
    assert len(judged.model_dump_json()) < 2048
    assert all(len(s.model_dump_json()) < 2048 for s in listed.values())


def test_summaries_filter_by_status_outcome_and_token_in_the_query(store: JobBackend) -> None:
    ids = fill(store)

    def names(**given: Any) -> set[str]:
        found = {s.id for s in store.summaries(**given)}
        return {name for name, job_id in ids.items() if job_id in found}

    assert names(status="done") == {"won", "close", "judged", "council"}
    assert names(status="queued") == {"queued"}
    assert names(status="cancelled") == set()
    assert names(outcome="winner") == {"won", "judged"}
    assert names(outcome="too_close") == {"close"}
    assert names(status="done", outcome="winner", token="tok-a") == {"won", "judged"}
    assert names(token="tok-b") == {"queued"}
    assert names(status="failed", token="tok-b") == set()
    assert len(store.summaries(limit=2, status="done")) == 2
