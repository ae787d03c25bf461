"""The service's job store: durable, idempotent, exclusive claims, ordered events."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from debate.service._models import DebateRequest, DecisionRequest, JobError, PanelOverrides
from debate.service._store import IdempotencyConflict, JobStore, QueueFull, new_id, token_id
from debate.storage import write_transaction


def debate(topic: str = "Should we adopt the plan?", seed: int | None = None) -> DebateRequest:
    return DebateRequest(topic=topic, config=PanelOverrides(seed=seed))


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    s = JobStore(tmp_path / "jobs.sqlite")
    yield s
    s.close()


def test_submit_get_list_newest_first(store: JobStore) -> None:
    first, created = store.submit("debate", debate("one"), token=None, idempotency_key=None)
    second, _ = store.submit("debate", debate("two"), token="tok-a", idempotency_key=None)
    assert created and first.status == "queued" and first.kind == "debate"
    assert store.get(first.id) == first
    assert store.get("nope") is None
    assert [j.id for j in store.list()] == [second.id, first.id]
    assert [j.id for j in store.list(token="tok-a")] == [second.id]
    assert [j.id for j in store.list(limit=1)] == [second.id]
    assert store.counts() == {"queued": 2, "running": 0, "done": 0, "failed": 0, "cancelled": 0}
    assert store.active() == 2 and store.active(token="tok-a") == 1
    assert [e.type for e in store.events(first.id)] == ["queued"]


def test_ids_sort_by_time_and_tokens_are_not_stored(store: JobStore, tmp_path: Path) -> None:
    ids = [new_id(t) for t in (1.0, 2.0, 1000.0)]
    assert ids == sorted(ids) and all(len(i) == 26 for i in ids)
    store.submit("debate", debate(), token="s3cret-bearer", idempotency_key="k")
    raw = (tmp_path / "jobs.sqlite").read_bytes() + Path(f"{tmp_path}/jobs.sqlite-wal").read_bytes()
    assert b"s3cret-bearer" not in raw
    assert token_id("s3cret-bearer").encode() in raw


def test_seed_is_drawn_at_submit_and_kept(store: JobStore) -> None:
    job, _ = store.submit("debate", debate(), token=None, idempotency_key=None)
    stored = store.request(job.id)
    assert isinstance(stored, DebateRequest) and stored.config.seed is not None
    given, _ = store.submit("debate", debate(seed=7), token=None, idempotency_key=None)
    again = store.request(given.id)
    assert isinstance(again, DebateRequest) and again.config.seed == 7


def test_request_comes_back_as_its_kinds_model(store: JobStore) -> None:
    rows = [{"item": "a", "judge": "j1", "option": "x", "score": 3}]
    job, _ = store.submit(
        "decision", DecisionRequest(rows=rows, scale="1-5"), token=None, idempotency_key=None
    )
    assert store.request(job.id) == DecisionRequest(rows=rows, scale="1-5")
    with pytest.raises(ValueError, match="a debate job takes a DebateRequest"):
        store.submit("debate", DecisionRequest(rows=rows), token=None, idempotency_key=None)


def test_idempotency_same_key_same_job(store: JobStore) -> None:
    a, created_a = store.submit("debate", debate(), token="t", idempotency_key="key-1")
    b, created_b = store.submit("debate", debate(), token="t", idempotency_key="key-1")
    assert created_a and not created_b and a.id == b.id
    # The seed drawn for the first does not make the retry a different body.
    assert len(store.list()) == 1
    # Another token's key is its own.
    c, created_c = store.submit("debate", debate(), token="u", idempotency_key="key-1")
    assert created_c and c.id != a.id


def test_idempotency_conflict_names_the_job(store: JobStore) -> None:
    a, _ = store.submit("debate", debate("one"), token=None, idempotency_key="k")
    with pytest.raises(IdempotencyConflict) as caught:
        store.submit("debate", debate("two"), token=None, idempotency_key="k")
    assert caught.value.job.id == a.id
    assert caught.value.error.kind == "conflict"
    assert caught.value.error.field == "Idempotency-Key" and a.id in str(caught.value)
    assert len(store.list()) == 1


def test_claim_is_exclusive_under_racing_threads(store: JobStore) -> None:
    ids = {store.submit("debate", debate(f"t{i}"), token=None, idempotency_key=None)[0].id
           for i in range(200)}  # fmt: skip
    claimed: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def worker() -> None:
        start.wait()
        while True:
            got = store.claim(3)
            if not got:
                return
            with lock:
                claimed.extend(job.id for job, _ in got)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(claimed) == 200 and set(claimed) == ids
    assert store.counts()["running"] == 200
    job = store.get(claimed[0])
    assert job is not None and job.started is not None
    assert [e.type for e in store.events(job.id)] == ["queued", "running"]


def _claim_in_process(path: str, out: multiprocessing.Queue[list[str]]) -> None:
    s = JobStore(path)
    got: list[str] = []
    while batch := s.claim(2):
        got += [job.id for job, _ in batch]
    out.put(got)


def test_claim_is_exclusive_across_processes(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sqlite"
    s = JobStore(path)
    for i in range(60):
        s.submit("debate", debate(f"t{i}"), token=None, idempotency_key=None)
    ctx = multiprocessing.get_context("spawn")
    out: multiprocessing.Queue[list[str]] = ctx.Queue()
    procs = [ctx.Process(target=_claim_in_process, args=(str(path), out)) for _ in range(3)]
    for p in procs:
        p.start()
    got = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    flat = [i for part in got for i in part]
    assert len(flat) == 60 and len(set(flat)) == 60


def test_claim_takes_the_oldest_and_passes_a_token_at_its_limit(store: JobStore) -> None:
    a1, _ = store.submit("debate", debate("a1"), token="A", idempotency_key=None)
    a2, _ = store.submit("debate", debate("a2"), token="A", idempotency_key=None)
    a3, _ = store.submit("debate", debate("a3"), token="A", idempotency_key=None)
    b1, _ = store.submit("debate", debate("b1"), token="B", idempotency_key=None)
    first = [job.id for job, _ in store.claim(10, per_token=2)]
    assert first == [a1.id, a2.id, b1.id]  # a3 waits: A runs two already
    assert store.claim(10, per_token=2) == []
    store.finish(a1.id, {"ok": True}, None)
    assert [job.id for job, _ in store.claim(10, per_token=2)] == [a3.id]


def test_finish_fail_and_event_order(store: JobStore) -> None:
    a, _ = store.submit("debate", debate("a"), token=None, idempotency_key=None)
    b, _ = store.submit("debate", debate("b"), token=None, idempotency_key=None)
    store.claim(2)
    for i in range(5):
        store.append_event(a.id, "start", {"i": i})
    done = store.finish(a.id, {"decision": {"outcome": "winner"}}, "winner")
    assert done is not None and done.status == "done" and done.outcome == "winner"
    assert done.result == {"decision": {"outcome": "winner"}} and done.finished is not None
    events = store.events(a.id)
    assert [e.seq for e in events] == list(range(1, 9))
    assert [e.type for e in events] == ["queued", "running"] + ["start"] * 5 + ["done"]
    assert [e.data["i"] for e in events[2:7]] == [0, 1, 2, 3, 4]
    assert [e.seq for e in store.events(a.id, after=6)] == [7, 8]
    assert done.events == 8
    failed = store.fail(b.id, JobError(kind="provider", message="HTTP 500"))
    assert failed is not None and failed.status == "failed"
    assert failed.error == JobError(kind="provider", message="HTTP 500")
    # A final job keeps its end.
    assert store.finish(b.id, {}, None) == failed
    with pytest.raises(KeyError, match="no such job"):
        store.append_event("missing", "start", {})


def test_events_numbered_without_gaps_under_threads(store: JobStore) -> None:
    job, _ = store.submit("debate", debate(), token=None, idempotency_key=None)

    def add(n: int) -> None:
        for i in range(25):
            store.append_event(job.id, "start", {"thread": n, "i": i})

    threads = [threading.Thread(target=add, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [e.seq for e in store.events(job.id)] == list(range(1, 202))


def test_a_batch_of_events_is_numbered_per_job_in_order(store: JobStore) -> None:
    """Interleaved jobs' events keep each job's order; a deleted job's are dropped."""
    a, _ = store.submit("debate", debate("a"), token=None, idempotency_key=None)
    b, _ = store.submit("debate", debate("b"), token=None, idempotency_key=None)
    batch = [
        (job.id if job else "gone", "progress", {"i": i}, 100.0 + i)
        for i, job in enumerate([a, b, None, a, b, a])
    ]
    store.append_events(batch)
    store.append_event(a.id, "after", {})
    seen = [(e.seq, e.type, e.data, e.time) for e in store.events(a.id)]
    assert seen == [(1, "queued", {"kind": "debate"}, a.created)] + [
        (2, "progress", {"i": 0}, 100.0),
        (3, "progress", {"i": 3}, 103.0),
        (4, "progress", {"i": 5}, 105.0),
        (5, "after", {}, seen[-1][3]),
    ]
    assert [(e.seq, e.data) for e in store.events(b.id)][1:] == [(2, {"i": 1}), (3, {"i": 4})]


def test_cancel_queued_at_once_running_flagged(store: JobStore) -> None:
    a, _ = store.submit("debate", debate("a"), token=None, idempotency_key=None)
    b, _ = store.submit("debate", debate("b"), token=None, idempotency_key=None)
    store.claim(1)  # a runs
    cancelled = store.cancel(b.id)
    assert cancelled is not None and cancelled.status == "cancelled"
    assert cancelled.error is not None and cancelled.error.kind == "cancelled"
    flagged = store.cancel(a.id)
    assert flagged is not None and flagged.status == "running"
    assert store.cancel_requested([a.id, b.id]) == {a.id}
    ended = store.cancelled(a.id)
    assert ended is not None and ended.status == "cancelled"
    assert [e.type for e in store.events(a.id)][-2:] == ["cancel_requested", "cancelled"]
    assert store.cancel("missing") is None


def test_recover_requeues_running_jobs(store: JobStore) -> None:
    a, _ = store.submit("debate", debate("a"), token=None, idempotency_key=None)
    b, _ = store.submit("debate", debate("b"), token=None, idempotency_key=None)
    c, _ = store.submit("debate", debate("c"), token=None, idempotency_key=None)
    store.claim(3)
    store.finish(c.id, {}, None)
    store.cancel(b.id)  # flagged while running, then the process died
    assert store.recover() == 1
    again = store.get(a.id)
    assert again is not None and again.status == "queued" and again.started is None
    assert [e.type for e in store.events(a.id)][-1] == "requeued"
    gone = store.get(b.id)
    assert gone is not None and gone.status == "cancelled"
    [(job, _)] = store.claim(5)
    assert job.id == a.id and [e.data for e in store.events(a.id)][-1] == {"attempt": 2}


def test_second_store_on_the_same_file_sees_writes(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sqlite"
    one, two = JobStore(path), JobStore(path)
    job, _ = one.submit("debate", debate(), token=None, idempotency_key="k")
    seen = two.get(job.id)
    assert seen == job
    assert two.submit("debate", debate(), token=None, idempotency_key="k")[0].id == job.id
    two.claim(1)
    two.finish(job.id, {"x": 1}, "winner")
    later = one.get(job.id)
    assert later is not None and later.status == "done" and later.result == {"x": 1}
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    one.close()
    two.close()


def test_claim_latency(store: JobStore) -> None:
    """Claiming one job from a queue of 500 takes milliseconds, not tens of them."""
    for i in range(500):
        store.submit("debate", debate(f"t{i}"), token=f"tok{i % 5}", idempotency_key=None)
    times = []
    for _ in range(100):
        t0 = time.perf_counter()
        store.claim(1, per_token=1000)
        times.append(time.perf_counter() - t0)
    times.sort()
    assert times[len(times) // 2] < 0.02


def test_room_is_checked_in_the_submit_transaction(tmp_path: Path) -> None:
    """Eight threads racing for a bound of 3 admit exactly 3; a keyed retry still gets its job."""
    store = JobStore(tmp_path / "jobs.sqlite")
    outcomes: list[str] = []

    def one(i: int) -> None:
        try:
            store.submit("debate", DebateRequest(topic=f"T{i}?"), token=None,
                         idempotency_key=f"k{i}", room=(3, 3))  # fmt: skip
            outcomes.append("queued")
        except QueueFull as exc:
            assert exc.status == 429 and exc.error.kind == "rate_limit"
            outcomes.append("full")

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["full"] * 5 + ["queued"] * 3
    assert store.active() == 3
    accepted = store.list()[0]
    request = store.request(accepted.id)
    assert isinstance(request, DebateRequest)
    i = int(request.topic[1:-1])
    again, created = store.submit("debate", DebateRequest(topic=f"T{i}?"), token=None,
                                  idempotency_key=f"k{i}", room=(3, 3))  # fmt: skip
    assert (again.id, created) == (accepted.id, False)


def test_a_writer_waits_for_another_process_lock_then_writes_or_times_out(tmp_path: Path) -> None:
    """Another process's write lock is waited out (briefly polled), or fails at the timeout."""
    path = tmp_path / "w.sqlite"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("PRAGMA journal_mode=WAL")
    other.execute("CREATE TABLE t (x INTEGER)")
    ours = sqlite3.connect(path, isolation_level=None, timeout=30)
    lock = threading.RLock()  # not the other connection's: as if it were another process
    other.execute("BEGIN IMMEDIATE")
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        with write_transaction(ours, lock, timeout=0.05) as db:
            db.execute("INSERT INTO t VALUES (1)")
    releaser = threading.Timer(0.2, lambda: other.execute("COMMIT"))
    releaser.start()
    with write_transaction(ours, lock, timeout=10) as db:
        db.execute("INSERT INTO t VALUES (2)")
    releaser.join()
    assert [r[0] for r in ours.execute("SELECT x FROM t")] == [2]
    assert ours.execute("PRAGMA busy_timeout").fetchone()[0] == 30000  # left as it was
    other.close()
    ours.close()
