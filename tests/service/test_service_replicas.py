"""Several ``debate serve`` replicas (real processes) on one real PostgreSQL.

Each replica is the shipped command (uvicorn and its runner process) on a port of its own,
all on one database and one OpenAI-compatible test server (tests/support/openai_server.py). The
model server records each request's client port, so a request is told to the replica whose
runner process held that socket (read from /proc when that replica is killed).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.service.test_service_serve import Served
from tests.support.openai_server import FakeOpenAIServer

pytest.importorskip("psycopg")

import psycopg  # noqa: E402

FINAL = ("done", "failed", "cancelled")


class Replica(Served):
    """``python -m debate serve --database postgresql://…`` on a port of its own."""

    def __init__(
        self, tmp: Path, name: str, url: str, base_url: str, *, workers: int = 8, lease: float = 30
    ) -> None:
        extra = ("--lease", str(lease), "--per-token", str(workers), "--queue-bound", "100000")
        super().__init__(tmp, base_url, database=url, name=name, workers=workers, extra=extra)

    def start(self) -> None:
        self.launch()  # several replicas start at once; each test waits with ready()

    def ready(self, timeout: float = 90) -> None:
        super().ready(timeout)

    def pids(self) -> list[int]:
        assert self.process is not None
        return [self.process.pid, *self.children()]

    def kill(self) -> set[int]:
        """Freeze the replica (app and runner), note its TCP ports, SIGKILL both."""
        pids = self.pids()
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        ports = set().union(*(tcp_ports(pid) for pid in pids))
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        assert self.process is not None
        self.process.wait(10)
        return ports

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.log.close()


def tcp_ports(pid: int) -> set[int]:
    """The local ports of the TCP sockets process ``pid`` holds open."""
    return {local for local, _ in tcp_connections(pid)}


def tcp_connections(pid: int) -> set[tuple[int, int]]:
    """``(local port, remote port)`` of the TCP sockets process ``pid`` holds open."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] in inodes:
                local, remote = (int(f.rsplit(":", 1)[1], 16) for f in fields[1:3])
                ports.add((local, remote))
    return ports


def start_all(replicas: list[Replica]) -> None:
    for replica in replicas:  # starting together: their migrations meet on the advisory lock
        replica.start()
    for replica in replicas:
        replica.ready()


def topic(i: int) -> str:
    return f"Should team {i} adopt plan {i}?"


async def submit_all(replicas: list[Replica], jobs: int, clients: int) -> dict[int, str]:
    """``jobs`` debates from ``clients`` concurrent clients, each POST to a random replica."""
    ids: dict[int, str] = {}
    queue = iter(range(jobs))
    # A kept-alive connection the server closes (uvicorn's 5 s idle timeout) just as a request
    # goes out on it fails that request (one did, on a loaded machine): the pool lets idle
    # connections go sooner than the server does, and a request that still meets a closed
    # connection is sent again with the same Idempotency-Key, as a client should. The job
    # then exists once however often it was sent, which is what the test goes on to check.
    limits = httpx.Limits(max_connections=clients, keepalive_expiry=2.0)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:

        async def post(i: int, replica: Replica) -> httpx.Response:
            for attempt in range(3):
                try:
                    return await client.post(
                        replica.url + "/v1/debates",
                        json={"topic": topic(i)},
                        headers={"Idempotency-Key": f"job-{i}"},
                    )
                except httpx.TransportError:
                    if attempt == 2:
                        raise
            raise AssertionError("unreachable")

        async def one(k: int) -> None:
            pick = random.Random(k)
            for i in queue:
                answer = await post(i, pick.choice(replicas))
                assert answer.status_code == 202, answer.text
                ids[i] = answer.json()["id"]

        await asyncio.gather(*(one(k) for k in range(clients)))
    return ids


def wait_final(url: str, jobs: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    with psycopg.connect(url, autocommit=True) as db:
        while time.monotonic() < deadline:
            row = db.execute(
                "SELECT COUNT(*) FILTER (WHERE status IN ('done', 'failed', 'cancelled')), "
                "COUNT(*) FROM jobs"
            ).fetchone()
            assert row is not None
            if row[0] == row[1] == jobs:
                return
            time.sleep(0.5)
    raise AssertionError(f"jobs not final in {timeout:.0f} s")


def job_rows(url: str) -> dict[str, dict[str, Any]]:
    """Each job's status, topic, and how many times it was claimed and ended."""
    with psycopg.connect(url, autocommit=True) as db:
        jobs = {
            job_id: {"status": status, "topic": json.loads(result)["topic"] if result else None}
            for job_id, status, result in db.execute("SELECT id, status, result FROM jobs")
        }
        for job_id, kind, n in db.execute(
            "SELECT job, type, COUNT(*) FROM events GROUP BY job, type"
        ).fetchall():
            jobs[job_id][kind] = n
        for job_id, seqs in db.execute(
            "SELECT job, array_agg(seq ORDER BY seq) FROM events GROUP BY job"
        ).fetchall():
            jobs[job_id]["seqs"] = seqs
    return jobs


def prompt_counts(model: FakeOpenAIServer) -> Counter[str]:
    return Counter(json.dumps(r.body["messages"], sort_keys=True) for r in model.records)


@pytest.mark.slow
def test_three_replicas_finish_500_jobs_from_50_clients_exactly_once(
    tmp_path: Path, pg_url: str
) -> None:
    with FakeOpenAIServer(latency=0.05) as model:
        replicas = [Replica(tmp_path, f"r{k}", pg_url, model.base_url) for k in range(3)]
        try:
            start_all(replicas)
            ids = asyncio.run(submit_all(replicas, 500, 50))
            wait_final(pg_url, 500, timeout=600)
        finally:
            for replica in replicas:
                replica.stop()
        prompts = prompt_counts(model)
    jobs = job_rows(pg_url)
    assert len(set(ids.values())) == 500 == len(jobs)
    for i, job_id in ids.items():
        job = jobs[job_id]
        assert job["status"] == "done" and job["topic"] == topic(i), job
        assert job.get("running") == 1 and job.get("done") == 1, job  # claimed once, ended once
        assert job["seqs"] == list(range(1, len(job["seqs"]) + 1))
    assert max(prompts.values()) == 1  # no call was made twice: no job ran twice
    for replica in replicas:
        assert "Traceback" not in replica.tail()


def test_a_killed_replicas_jobs_are_finished_by_the_others_after_the_lease(
    tmp_path: Path, pg_url: str
) -> None:
    """SIGKILL one of three replicas mid-run, with a 3 s lease.

    Its jobs are taken over once their lease expires (not before), every job ends done once,
    and the calls sent again are at most the calls the killed replica had in flight, counted
    from the model server's log: its requests (by client port) not answered at the kill or
    read by the server only after it, plus those answered in the 50 ms before it (a reply the
    replica had read and not yet stored).
    """
    lease = 3.0
    with FakeOpenAIServer(latency=0.3) as model:
        replicas = [
            Replica(tmp_path, f"r{k}", pg_url, model.base_url, workers=4, lease=lease)
            for k in range(3)
        ]
        try:
            start_all(replicas)
            ids = asyncio.run(submit_all(replicas, 30, 10))
            deadline = time.monotonic() + 60
            while len(model.records) < 40:
                assert time.monotonic() < deadline
                time.sleep(0.01)
            killed_at = time.monotonic()
            wall_killed = time.time()
            ports = replicas[0].kill()
            wait_final(pg_url, 30, timeout=180)
        finally:
            for replica in replicas:
                replica.stop()
        records = list(model.records)
        prompts = prompt_counts(model)
    jobs = job_rows(pg_url)
    assert all(jobs[i]["status"] == "done" and jobs[i].get("done") == 1 for i in ids.values())
    mine = [r for r in records if r.peer in ports]
    in_flight = sum(r.end > killed_at - 0.05 or r.start > killed_at for r in mine)
    resent = sum(n - 1 for n in prompts.values())
    assert in_flight > 0, "the killed replica had calls in flight"
    assert resent <= in_flight, (resent, in_flight)
    with psycopg.connect(pg_url, autocommit=True) as db:
        taken = db.execute(
            "SELECT e.job, e.time FROM events e WHERE e.type = 'requeued' "
            "AND e.data LIKE '%lease expired%'"
        ).fetchall()
    assert taken, "the killed replica's jobs were taken over"
    # Not before the lease: the last renewal came at most a third of it before the kill.
    assert all(when >= wall_killed + lease * 2 / 3 - 0.5 for _, when in taken)


def test_an_event_stream_on_one_replica_follows_a_job_run_on_another(
    tmp_path: Path, pg_url: str
) -> None:
    """The job runs on whichever replica claims it (told by the port of its first model
    call); its events are streamed, live, from the other one, then resumed there."""
    with FakeOpenAIServer(latency=0.5) as model:
        replicas = [Replica(tmp_path, f"r{k}", pg_url, model.base_url) for k in range(2)]
        try:
            start_all(replicas)
            answer = httpx.post(replicas[0].url + "/v1/debates", json={"topic": topic(1)})
            job_id = answer.json()["id"]
            deadline = time.monotonic() + 30
            model_port = int(model.base_url.split(":")[2].split("/")[0])
            runs = None
            while runs is None:  # the replica whose runner connected to the model server
                assert time.monotonic() < deadline
                for replica in replicas:
                    remote = {r for pid in replica.pids() for _, r in tcp_connections(pid)}
                    if model_port in remote:
                        runs = replica
                time.sleep(0.01)
            watcher = replicas[1] if runs is replicas[0] else replicas[0]
            received: list[tuple[float, dict[str, Any]]] = []
            resumed: list[int] = []

            def follow(headers: dict[str, str], into: list[Any], stamp: bool) -> None:
                url = f"{watcher.url}/v1/jobs/{job_id}/events"
                with httpx.stream("GET", url, headers=headers, timeout=120) as stream:
                    for line in stream.iter_lines():
                        if line.startswith("data: "):
                            event = json.loads(line[6:])
                            into.append((time.time(), event) if stamp else event["seq"])

            follow({}, received, True)
            follow({"Last-Event-ID": "3"}, resumed, False)
            job = httpx.get(f"{runs.url}/v1/jobs/{job_id}").json()
            stored = httpx.get(f"{runs.url}/v1/jobs/{job_id}/events").text
        finally:
            for replica in replicas:
                replica.stop()
    seqs = [event["seq"] for _, event in received]
    assert job["status"] == "done"
    assert seqs == list(range(1, job["events"] + 1))  # every event, in order, none twice
    assert received[-1][1]["type"] == "done"
    assert stored.count("data: ") == len(seqs)
    # Followed live: events reached the other replica's stream before the job ended.
    live = sum(when < job["finished"] for when, _ in received)
    assert live >= len(seqs) // 2, (live, len(seqs))
    assert resumed == list(range(4, job["events"] + 1))  # Last-Event-ID resumes after 3


def test_the_same_idempotency_key_on_two_replicas_makes_one_job(
    tmp_path: Path, pg_url: str
) -> None:
    with FakeOpenAIServer(latency=0.05) as model:
        one = Replica(tmp_path, "one", pg_url, model.base_url)
        two = Replica(tmp_path, "two", pg_url, model.base_url)
        try:
            start_all([one, two])
            body = {"topic": topic(7)}

            async def both() -> list[httpx.Response]:
                async with httpx.AsyncClient(timeout=30) as client:
                    posts = [
                        client.post(
                            r.url + "/v1/debates", json=body, headers={"Idempotency-Key": "same"}
                        )
                        for r in (one, two) * 4
                    ]
                    return list(await asyncio.gather(*posts))

            answers = asyncio.run(both())
            other = httpx.post(
                two.url + "/v1/debates",
                json={"topic": topic(8)},
                headers={"Idempotency-Key": "same"},
            )
            listed = httpx.get(one.url + "/v1/jobs").json()
        finally:
            one.stop()
            two.stop()
    assert {a.status_code for a in answers} == {202}
    assert len({a.json()["id"] for a in answers}) == 1
    assert other.status_code == 409 and other.json()["error"]["field"] == "Idempotency-Key"
    assert [job["id"] for job in listed] == [answers[0].json()["id"]]
