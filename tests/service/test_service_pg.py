"""The PostgreSQL job store on a real server: claims, leases, idempotency, limits, events.

Two stores on one database stand for two replicas (each process has its own store, its own
pool and its own lease owner). The server is tests/support/pg_server.py's, started once a session.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from debate.exceptions import ConfigurationError
from debate.models import TokenUsage
from debate.service import database_target
from debate.service._jobs import IdempotencyConflict, QueueFull
from debate.service._models import DebateRequest, JobError, PanelOverrides
from debate.storage import CallCost

pytest.importorskip("psycopg")

from debate.service._pgstore import PgJobStore  # noqa: E402
from debate.storage import PgResponseCache  # noqa: E402
from debate.storage._cache import CachedReply  # noqa: E402
from debate.storage._pg import redact  # noqa: E402


def debate(topic: str = "Should we adopt the plan?", seed: int | None = None) -> DebateRequest:
    return DebateRequest(topic=topic, config=PanelOverrides(seed=seed))


@pytest.fixture
def two(pg_url: str) -> Iterator[tuple[PgJobStore, PgJobStore]]:
    a, b = PgJobStore(pg_url, lease=1.0), PgJobStore(pg_url, lease=1.0)
    yield a, b
    a.close()
    b.close()


def test_database_values_tell_a_path_from_a_url_and_never_echo_a_password() -> None:
    assert str(database_target("jobs.sqlite")) == "jobs.sqlite"
    url = "postgresql://ann:hunter2@db:5432/jobs"
    assert database_target(url) == url
    assert database_target("postgres://db/jobs") == "postgres://db/jobs"
    with pytest.raises(ConfigurationError) as refused:
        database_target("mysql://ann:hunter2@db/jobs")
    assert "hunter2" not in str(refused.value) and "mysql://" in str(refused.value)
    assert redact(url) == "postgresql://ann:***@db:5432/jobs"


def test_an_unreachable_server_is_one_line_without_the_password() -> None:
    with pytest.raises(ConfigurationError) as refused:
        PgJobStore("postgresql://ann:hunter2@127.0.0.1:1/jobs")
    message = str(refused.value)
    assert message.startswith("--database: cannot connect to postgresql://ann:***@127.0.0.1:1/")
    assert "hunter2" not in message and "\n" not in message


def test_two_replicas_never_claim_the_same_job(two: tuple[PgJobStore, PgJobStore]) -> None:
    a, b = two
    ids = {a.submit("debate", debate(f"T{i}?"), token=None, idempotency_key=None)[0].id
           for i in range(60)}  # fmt: skip
    taken: list[list[str]] = [[], []]

    def claim(store: PgJobStore, into: list[str]) -> None:
        while True:
            got = store.claim(3)
            if not got:
                return
            into.extend(job.id for job, _ in got)

    threads = [
        threading.Thread(target=claim, args=(s, t)) for s, t in zip((a, b), taken, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(taken[0] + taken[1]) == sorted(ids)
    assert not set(taken[0]) & set(taken[1])
    assert taken[0] and taken[1]  # both replicas worked
    job = a.get(taken[0][0])
    assert job is not None and job.status == "running"
    assert [e.type for e in a.events(job.id)] == ["queued", "running"]


def test_a_dead_replicas_job_is_taken_over_after_its_lease_not_before(
    two: tuple[PgJobStore, PgJobStore],
) -> None:
    a, b = two
    job, _ = a.submit("debate", debate(), token=None, idempotency_key=None)
    assert [j.id for j, _ in a.claim(1)] == [job.id]
    assert b.recover() == 0  # a start takes nothing
    assert b.claim(1) == []  # the lease holds
    assert a.renew([job.id]) == set()
    time.sleep(1.2)  # a stops renewing (killed): its lease runs out
    taken = b.claim(1)
    assert [j.id for j, _ in taken] == [job.id]
    types = [e.type for e in b.events(job.id)]
    assert types == ["queued", "running", "requeued", "running"]
    assert b.events(job.id)[2].data == {"reason": "lease expired"}
    assert a.renew([job.id]) == {job.id}  # a learns it lost the job
    assert a.requeue(job.id) is not None and b.get(job.id).status == "running"  # type: ignore[union-attr]
    done = b.finish(job.id, {"ok": True}, "winner")
    assert done is not None and done.status == "done"
    assert a.finish(job.id, {"ok": False}, None).result == {"ok": True}  # type: ignore[union-attr]
    assert [e.type for e in a.events(job.id)].count("done") == 1


def test_the_same_idempotency_key_on_two_replicas_makes_one_job(
    two: tuple[PgJobStore, PgJobStore],
) -> None:
    a, b = two
    results: list[Any] = []
    barrier = threading.Barrier(8)

    def submit(store: PgJobStore) -> None:
        barrier.wait()
        results.append(store.submit("debate", debate(), token="tok", idempotency_key="k1"))

    threads = [threading.Thread(target=submit, args=((a, b)[i % 2],)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len({job.id for job, _ in results}) == 1
    assert sum(created for _, created in results) == 1
    with pytest.raises(IdempotencyConflict):
        b.submit("debate", debate("another body"), token="tok", idempotency_key="k1")
    # The key is the token's: another token's same key is another job.
    other, created = b.submit("debate", debate(), token="tok2", idempotency_key="k1")
    assert created and other.id != results[0][0].id


def test_the_queue_bound_and_token_share_hold_across_replicas(
    two: tuple[PgJobStore, PgJobStore],
) -> None:
    a, b = two
    outcomes: list[str] = []
    barrier = threading.Barrier(20)

    def submit(i: int) -> None:
        barrier.wait()
        try:
            (a, b)[i % 2].submit("debate", debate(f"T{i}?"), token=f"t{i % 4}",
                                 idempotency_key=None, room=(10, 3))  # fmt: skip
            outcomes.append("ok")
        except QueueFull:
            outcomes.append("full")

    threads = [threading.Thread(target=submit, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert outcomes.count("ok") == 10 and a.active() == 10
    assert all(a.active(token=f"t{k}") <= 3 for k in range(4))


def test_per_token_concurrency_holds_across_replicas(two: tuple[PgJobStore, PgJobStore]) -> None:
    a, b = two
    for i in range(6):
        a.submit("debate", debate(f"A{i}?"), token="ann", idempotency_key=None)
    late, _ = a.submit("debate", debate("B?"), token="bob", idempotency_key=None)
    first = a.claim(2, per_token=2)
    second = b.claim(5, per_token=2)
    assert len(first) == 2 and [j.id for j, _ in second] == [late.id]  # ann is at her limit
    a.finish(first[0][0].id, {}, None)
    assert len(b.claim(5, per_token=2)) == 1  # one of ann's may start now


def test_cancel_on_one_replica_reaches_the_runner_on_another(
    two: tuple[PgJobStore, PgJobStore],
) -> None:
    a, b = two
    queued, _ = a.submit("debate", debate("Q?"), token=None, idempotency_key=None)
    running, _ = a.submit("debate", debate("R?"), token=None, idempotency_key=None)
    assert b.cancel(queued.id).status == "cancelled"  # type: ignore[union-attr]
    assert [j.id for j, _ in a.claim(5)] == [running.id]
    assert b.cancel(running.id).status == "running"  # type: ignore[union-attr]
    assert a.cancel_requested([running.id]) == {running.id}
    assert a.cancelled(running.id).status == "cancelled"  # type: ignore[union-attr]
    assert a.fail(running.id, JobError(kind="runtime", message="x")).status == "cancelled"  # type: ignore[union-attr]


def test_events_are_numbered_in_order_and_notified_to_other_replicas(
    two: tuple[PgJobStore, PgJobStore],
) -> None:
    a, b = two
    job, _ = a.submit("debate", debate(), token=None, idempotency_key=None)
    other, _ = a.submit("debate", debate("O?"), token=None, idempotency_key=None)

    async def watch() -> float:
        with b.watch(job.id) as watching:
            await asyncio.to_thread(b._feed.listening.wait, 10)
            watching.clear()
            started = time.monotonic()
            writer = threading.Timer(
                0.3, a.append_events, args=([(job.id, "progress", {"n": 1}, time.time())],)
            )
            writer.start()
            await watching.wait(10)
            writer.join()
            return time.monotonic() - started

    waited = asyncio.run(watch())
    assert 0.25 < waited < 3  # woken by the NOTIFY, not by the 10 s timeout
    batch = [(job.id, "progress", {"n": n}, time.time()) for n in range(2, 6)]
    batch.insert(2, (other.id, "progress", {"n": 0}, time.time()))
    batch.append(("no-such-job", "progress", {}, time.time()))
    a.append_events(batch)
    seqs = [(e.seq, e.data.get("n")) for e in b.events(job.id)]
    assert seqs == [(1, None), (2, 1), (3, 2), (4, 3), (5, 4), (6, 5)]
    assert [e.seq for e in b.events(job.id, after=4)] == [5, 6]
    assert b.get(job.id).events == 6  # type: ignore[union-attr]
    assert [e.seq for e in b.events(other.id)] == [1, 2]


def test_a_newer_schema_is_refused_in_one_line(pg_url: str) -> None:
    import psycopg

    PgJobStore(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute("UPDATE schema_version SET version = 99 WHERE component = 'jobs'")
        versions = dict(db.execute("SELECT component, version FROM schema_version").fetchall())
    assert versions == {"jobs": 99}  # the cache's table is made by the runner's cache
    with pytest.raises(ConfigurationError) as refused:
        PgJobStore(pg_url)
    assert str(refused.value) == (
        "--database: its jobs schema is version 99, newer than this build's 1; upgrade "
        "debate on this server to the version the other servers run"
    )


def test_the_response_cache_is_shared_first_writer_wins(pg_url: str) -> None:
    one, two = PgResponseCache(pg_url), PgResponseCache(pg_url)
    try:
        usage = TokenUsage(prompt_tokens=10, completion_tokens=5, cached_tokens=0)
        cost = CallCost(attempts=2, answered=2, usage=usage)
        assert one.get("k") is None and one.misses == 1
        one.put("k", "m", "first", usage, cost)
        two.put("k", "m", "second", usage)
        got = two.get("k")
        assert got is not None and got.text == "first" and got.call_cost.attempts == 2
        two.put("k", "m2", "fixed", usage, replace=True)
        again = one.get("k")
        assert again is not None and again.text == "fixed" and again.cost is None
        assert len(one) == 1
    finally:
        one.close()
        two.close()


def test_puts_written_together_keep_the_first_writer_and_replace_rules(pg_url: str) -> None:
    cache = PgResponseCache(pg_url)
    try:
        usage = TokenUsage(prompt_tokens=10, completion_tokens=5, cached_tokens=0)
        cost = CallCost(attempts=3, answered=2, usage=usage)
        cache.put("g0", "m", "old", usage)

        async def together() -> None:
            await asyncio.gather(
                cache.put_async("g1", "m", "first", usage, cost),
                cache.put_async("g1", "m", "second", usage),
                cache.put_async("g0", "m", "new", usage, replace=True),
                cache.put_async("g2", "m", "other", usage),
            )

        asyncio.run(together())

        async def lookups() -> list[CachedReply | None]:
            keys = ("g0", "g1", "g2", "absent")
            return await asyncio.gather(*(cache.get_async(key) for key in keys))

        assert asyncio.run(lookups()) == [cache.get(key) for key in ("g0", "g1", "g2", "absent")]
        texts = {key: cache.get(key) for key in ("g0", "g1", "g2")}
        assert {k: v.text if v else None for k, v in texts.items()} == {
            "g0": "new",
            "g1": "first",
            "g2": "other",
        }
        assert texts["g1"] is not None and texts["g1"].call_cost.attempts == 3
    finally:
        cache.close()


def test_a_runner_that_lost_its_lease_stops_its_copy_and_records_nothing(
    pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A runner stalled past its lease: another runner takes the job over; the first one's
    next renewal finds the job lost and drops its copy, so the job ends once, by the other."""
    from debate.models.test import TestModel
    from debate.records import build_config
    from debate.service import ServiceLimits, ServiceSettings
    from debate.service._runner import JobRunner, ModelBundle

    judges = [{"role": "technical"}, {"role": "risk"}]
    small = build_config({"arguments": 1, "rounds": 0, "judges": judges, "provider_retries": 0})
    settings = ServiceSettings(limits=ServiceLimits(workers=2, per_token_concurrency=2))
    slow = lambda: ModelBundle(model=TestModel(delay=1.0))  # noqa: E731
    stalled_store, other_store = PgJobStore(pg_url, lease=1.5), PgJobStore(pg_url, lease=1.5)

    async def scenario() -> tuple[Any, list[str]]:
        job, _ = stalled_store.submit("debate", debate(), token=None, idempotency_key=None)
        first = JobRunner(stalled_store, settings, make_models=slow, config=small, poll=0.05)
        await first.start()
        deadline = time.monotonic() + 20
        while job.id not in first.running:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        # The stall: its lease runs out in the database while it still runs the job.
        import psycopg

        with psycopg.connect(pg_url, autocommit=True) as db:
            db.execute("UPDATE jobs SET lease_until = 0 WHERE id = %s", (job.id,))
        second = JobRunner(other_store, settings, make_models=slow, config=small, poll=0.05)
        await second.start()
        while job.id in first.running:  # dropped at its next renewal (every 0.5 s)
            assert time.monotonic() < deadline + 10
            await asyncio.sleep(0.02)
        while (other_store.get(job.id) or job).status != "done":
            assert time.monotonic() < deadline + 60
            await asyncio.sleep(0.05)
        await first.stop()
        await second.stop()
        return other_store.get(job.id), [e.type for e in other_store.events(job.id)]

    try:
        ended, types = asyncio.run(scenario())
    finally:
        stalled_store.close()
        other_store.close()
    assert ended is not None and ended.status == "done"
    assert types.count("done") == 1 and types.count("running") == 2
    assert types.count("requeued") == 1  # the takeover's, with reason "lease expired"
    dropped = [r.getMessage() for r in caplog.records if "lease was taken over" in r.getMessage()]
    assert dropped == [f"job {ended.id}: its lease was taken over; stopping it here"]
