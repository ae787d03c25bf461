"""The service under load, and killed under load, against a model server with 200 ms latency.

    python benchmarks/bench_service.py [--jobs 500] [--clients 50] [--workers 8,64]
                                       [--runners 1,2] [--think 0.5] [--latency 0.2]
                                       [--runs both|load|kill]
    python benchmarks/bench_service.py --database postgresql --replicas 1 2 3 [--workers 8]

Everything runs on 127.0.0.1: the model server (tests/support/openai_server.py's FakeOpenAIServer,
threaded, in its own process), the service (``debate serve`` in its own process, on its own
SQLite database), and the clients (aiohttp, in this process: httpx's client pool costs about
10 ms of CPU per request at 50 connections, and the clients' own cost was the latency measured).

1. Load, once per ``--workers`` W: ``--jobs`` debate jobs submitted by ``--clients``
   concurrent clients, each pausing a random time between its submits (exponential, mean
   ``--think`` seconds: 50 clients at 0.5 s offer about 100 jobs/s, every job in about 5 s,
   against a service that runs some 18 a second; ``--think 0`` sends back to back, which
   measures the API's capacity rather than its latency). Reported:
   every job finishes with its own result (ids unique, each result's topic the one sent,
   the service lists no extra job); submission latency p50/p99 (bound: p99 < 50 ms); and
   model-call throughput against the server's ideal at the configured concurrency
   (bound: >= 0.80). The configured concurrency C is the calls a ``--workers`` W service
   keeps in flight when only the model server makes it wait: each of the W jobs runs its
   debate's critical path (openings, cross-examinations, closings, the judges: 3 + rounds
   steps of L each) and makes its calls in that time, so C = W x calls per job / steps and
   the ideal is C / L calls/s.
   With ``--runners 1,2`` (the default) each W runs once per runner count: the service's
   ``--runners``, its runner processes, ``--workers`` split among them. The bounds are
   judged on the most runners (one per core of this 2-core machine, as a user who wants the
   throughput runs it); the fewer are printed beside them, in the same run.
2. Kill: the same load at the largest W and the most runners, the service SIGKILLed once
   when about half the calls are made and restarted on the same database. Reported: every
   job finishes; calls re-sent after the restart (prompts the model server saw before it
   and again after) against the calls in flight at the kill (sent, reply not yet stored)
   (bound: <=).

3. Replicas (``--database postgresql --replicas 1 2 3``, instead of 1 and 2): the load of 1
   on one SQLite server (the anchor), then on N ``debate serve`` replicas sharing one
   PostgreSQL, every server with the most ``--runners``
   PostgreSQL (tests/support/pg_server.py's, started here in a temporary folder), each POST
   sent to a replica at random and every job read back from another. Reported for each: calls/s, its
   ratio to the ideal of N x W workers and to the SQLite anchor, and the CPU per model call
   of the services' processes and of the database's. On a 2-core machine the replicas share
   the cores, so the figures show what each replica and the database cost, not scaling.

Prints each figure with its ratio to the bound and exits 1 if a bound fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import httpx
from child_env import child_env

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FINAL = ("done", "failed", "cancelled")
ROUNDS = 1
"""The debates' cross-examination rounds (the default): 3 + ROUNDS steps on the critical path."""
THROUGHPUT_BOUND = 0.80
"""Issue 30: model calls per second at least this share of the ideal, for every store."""
P99_BOUND_MS = 50
"""Submission latency's 99th percentile below this (the service's own bound), for every store."""

MODEL_SERVER = """
import hashlib, json, sys, threading
sys.path.insert(0, {root!r})
from tests.support.openai_server import FakeOpenAIServer
with FakeOpenAIServer(latency={latency}) as server:
    print(server.base_url, flush=True)
    for line in sys.stdin:
        kill, restart = (list(map(float, line.split()[1:])) + [0.0, 0.0])[:2]
        with server._lock:
            records, in_flight = list(server.records), server.in_flight
        seen, keys = {{}}, []
        for r in records:
            key = hashlib.sha256(json.dumps(r.body["messages"]).encode()).hexdigest()
            seen[key] = seen.get(key, 0) + 1
            keys.append(key)
        early = {{k for k, r in zip(keys, records) if r.start < restart}} if restart else set()
        late = {{k for k, r in zip(keys, records) if r.start >= restart}} if restart else set()
        print(json.dumps({{
            "resent_after_restart": len(early & late),
            "calls": len(records),
            "in_flight": in_flight,
            "max_in_flight": server.max_in_flight,
            "resent": sum(n - 1 for n in seen.values()),
            "unfinished_at_kill": sum(r.end > kill and r.start < restart for r in records),
            "sent_by_killed": sum(r.start < restart for r in records),
            "busy": sum(r.end - r.start for r in records),
            "first": min((r.start for r in records), default=0.0),
            "last": max((r.end for r in records), default=0.0),
        }}), flush=True)
"""
"""The model server, in its own process so that the clients' work does not slow it; each
line on its stdin asks for its figures (one JSON line back). ``stats KILL RESTART``
(``time.monotonic()`` seconds, one clock for every process here) also counts the calls the
killed service had sent and not got back: those still running at the kill, and those it sent
that the server took up only after it (still in a socket buffer), before the restart."""


class ModelServer:
    def __init__(self, latency: float, folder: Path) -> None:
        # Its stderr gets the tracebacks of requests a killed service left half sent.
        self.log = (folder / "model-server.log").open("a")
        self.process = subprocess.Popen(
            [sys.executable, "-c", MODEL_SERVER.format(root=str(ROOT), latency=latency)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )
        assert self.process.stdout is not None
        self.base_url = self.process.stdout.readline().strip()

    def stats(self, kill: float = 0.0, restart: float = 0.0) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"stats {kill} {restart}\n")
        self.process.stdin.flush()
        return dict(json.loads(self.process.stdout.readline()))

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(10)
        self.log.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Service:
    """``debate serve`` as a subprocess on a fixed port and database, restartable."""

    def __init__(
        self,
        args: argparse.Namespace,
        base_url: str,
        folder: Path,
        workers: int,
        database: str | None = None,
        name: str = "service",
        runners: int = 1,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.folder = folder
        self.log = (folder / f"{name}.log").open("a")
        self.command = [
            *args.serve.split(),
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--database", database or str(folder / "service.sqlite"),
            "--workers", str(workers),
            "--runners", str(runners),
            "--per-token", str(workers),
            "--queue-bound", str(max(1000, args.jobs)),
            "--model", "bench",
            "--base-url", base_url,
            "--api-key-env", "",
        ]  # fmt: skip
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        # The checkout's package, whatever the environment has installed (an editable
        # install of another checkout would otherwise serve).
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        self.process = subprocess.Popen(
            self.command,
            stdout=self.log,
            stderr=self.log,
            cwd=self.folder,
            env=child_env(PYTHONPATH=path),
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"the service exited; see {self.log.name}"
            try:
                if httpx.get(self.url + "/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise SystemExit(f"the service was not ready in 60 s; see {self.log.name}")

    def kill(self) -> list[int]:
        """SIGKILL the service; returns the pids of its children (its runner process)."""
        assert self.process is not None
        pid = self.process.pid
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)
        return [int(child) for child in children]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.log.close()


@dataclass
class Load:
    """What the clients saw: each job's id, the POST latencies, and the jobs as finished."""

    ids: dict[int, str] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    """Seconds of each POST answered at the first attempt."""
    retried: int = 0
    """POSTs sent again (with the same Idempotency-Key) after a refused or lost connection."""
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)


async def submit(
    client: aiohttp.ClientSession, url: str | list[str], load: Load, i: int, tag: str
) -> None:
    """POST one debate until answered; a retry carries the same Idempotency-Key."""
    body = {"topic": topic(i), "config": {"seed": i}}
    headers = {"Idempotency-Key": f"{tag}-{i}"}
    for attempt in range(600):
        start = time.perf_counter()
        target = random.choice(url) if isinstance(url, list) else url  # a replica at random
        try:
            async with client.post(target + "/v1/debates", json=body, headers=headers) as response:
                status, answer = response.status, await response.read()
        except (aiohttp.ClientError, asyncio.TimeoutError):
            status, answer = 0, b""
        if status == 202:
            if attempt == 0:
                load.latencies.append(time.perf_counter() - start)
            load.ids[i] = json.loads(answer)["id"]
            return
        load.retried += 1
        await asyncio.sleep(0.2)
    raise SystemExit(f"job {i}: not accepted after 600 attempts")


def topic(i: int) -> str:
    return f"Should team {i} adopt plan {i} this quarter?"


def session(connections: int) -> aiohttp.ClientSession:
    timeout = aiohttp.ClientTimeout(total=30)
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=connections), timeout=timeout)


async def clients(
    url: str | list[str], load: Load, jobs: int, n: int, tag: str, think: float
) -> None:
    queue = iter(range(jobs))
    async with session(n) as client:

        async def one(k: int) -> None:
            pause = random.Random(k)
            if think > 0:  # clients start as they come, not in the same millisecond
                await asyncio.sleep(pause.expovariate(1 / think))
            for i in queue:
                await submit(client, url, load, i, tag)
                if think > 0:
                    await asyncio.sleep(pause.expovariate(1 / think))

        await asyncio.gather(*(one(k) for k in range(n)))


async def watch(url: str, load: Load, jobs: int) -> None:
    """Read jobs until every one is final, lightly: a sweep stops at a few unfinished ones."""
    async with session(4) as client:
        while len(load.jobs) < jobs:
            unfinished = 0
            for i in sorted(load.ids):
                job_id = load.ids[i]
                if job_id in load.jobs:
                    continue
                try:
                    async with client.get(f"{url}/v1/jobs/{job_id}") as response:
                        job = json.loads(await response.read())
                except (aiohttp.ClientError, asyncio.TimeoutError, ValueError):
                    break  # the service is down: wait for it
                if job.get("status") in FINAL:
                    load.jobs[job_id] = job
                    continue
                unfinished += 1
                if unfinished >= 8:
                    break
            await asyncio.sleep(0.5)


async def run_load(service: Service, args: argparse.Namespace, tag: str) -> Load:
    load = Load()
    watcher = asyncio.create_task(watch(service.url, load, args.jobs))
    await clients(service.url, load, args.jobs, args.clients, tag, args.think)
    await asyncio.wait_for(watcher, timeout=args.timeout)
    return load


async def killer(service: Service, model: ModelServer, at_calls: int) -> tuple[float, float, int]:
    """SIGKILL the service once the model server has seen ``at_calls`` calls; restart it.

    Returns the kill's and the restart's ``time.monotonic()``, and the replies the killed
    service had stored (rows of its response cache, read between the kill and the restart).
    """
    while (await asyncio.to_thread(model.stats))["calls"] < at_calls:
        await asyncio.sleep(0.05)
    kill = time.monotonic()
    children = await asyncio.to_thread(service.kill)
    await asyncio.to_thread(gone, children)  # the runner process ends when it sees the kill
    stored = await asyncio.to_thread(stored_replies, service.folder / "service.sqlite")
    restart = time.monotonic()
    await asyncio.to_thread(service.start)
    return kill, restart, stored


def gone(pids: list[int], timeout: float = 10.0) -> None:
    """Wait until the processes have exited (zombies count as exited)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = []
        for pid in pids:
            try:
                states.append(Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0])
            except OSError:
                continue
        if all(state == "Z" for state in states):
            return
        time.sleep(0.005)
    raise SystemExit(f"the service's processes {pids} outlived it by {timeout:.0f} s")


def stored_replies(database: Path) -> int:
    """Rows of the response cache: the calls whose replies are durable."""
    with closing(sqlite3.connect(database)) as db:
        return int(db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else 0.0


def check_jobs(load: Load, url: str, jobs: int) -> list[str]:
    """Every job finished with its own result; none lost, none made twice."""
    lines, failed = [], []
    ids = list(load.ids.values())
    done = [j for j in load.jobs.values() if j["status"] == "done" and j.get("result")]
    mixed = [
        i for i, job_id in load.ids.items() if load.jobs[job_id]["result"]["topic"] != topic(i)
    ] if len(done) == jobs else []  # fmt: skip
    listed = httpx.get(url + "/v1/jobs", params={"limit": 1000}, timeout=60)
    count = len(listed.json()) if listed.status_code == 200 else None
    lines.append(
        f"jobs: {len(ids)} accepted, {len(set(ids))} distinct ids, {len(done)} done with a "
        f"result, {len(mixed)} with another job's topic; the service lists {count}"
    )
    if not (len(set(ids)) == len(ids) == len(done) == jobs and not mixed and count == jobs):
        failed.append("lost or duplicated jobs")
    for job in load.jobs.values():
        if job["status"] != "done":
            failed.append(f"job {job['id']} {job['status']}: {job.get('error')}")
            break
    return lines + [f"FAILED: {f}" for f in failed]


def throughput(
    load: Load, stats: dict[str, Any], args: argparse.Namespace, workers: int
) -> tuple[str, bool]:
    jobs = list(load.jobs.values())
    window = max(j["finished"] for j in jobs) - min(j["created"] for j in jobs)
    per_job = stats["calls"] / len(jobs)
    concurrency = workers * per_job / (3 + ROUNDS)
    ideal = concurrency / args.latency
    rate = stats["calls"] / window
    mean_in_flight = stats["busy"] / window
    ratio = rate / ideal
    return (
        f"throughput: {stats['calls']} calls ({per_job:.1f} per job) in {window:.2f} s = "
        f"{rate:.1f} calls/s = {ratio:.3f} x the ideal {ideal:.0f} calls/s at concurrency "
        f"C = {concurrency:.0f} (W {workers} x {per_job:.1f} calls / {3 + ROUNDS} "
        f"steps) (bound >= {THROUGHPUT_BOUND}); server mean in flight {mean_in_flight:.1f}, "
        f"max {stats['max_in_flight']}",
        ratio >= THROUGHPUT_BOUND,
    )


def report_load(
    load: Load, stats: dict[str, Any], url: str, args: argparse.Namespace, workers: int
) -> bool:
    lines = check_jobs(load, url, args.jobs)
    p50, p99 = percentile(load.latencies, 0.5) * 1000, percentile(load.latencies, 0.99) * 1000
    lines.append(
        f"submission: p50 {p50:.1f} ms, p99 {p99:.1f} ms = {p99 / P99_BOUND_MS:.3f} x the "
        f"{P99_BOUND_MS} ms bound "
        f"({len(load.latencies)} first attempts, {load.retried} retried)"
    )
    ok = p99 < P99_BOUND_MS and not any(line.startswith("FAILED") for line in lines)
    if load.jobs and len(load.jobs) == args.jobs:
        line, fast = throughput(load, stats, args, workers)
        lines.append(line)
        ok = ok and fast
    lines.append(f"calls re-sent without a kill: {stats['resent']}")
    print("\n".join("  " + line for line in lines))
    return ok and stats["resent"] == 0


def report_kill(
    load: Load, stats: dict[str, Any], stored: int, url: str, args: argparse.Namespace
) -> bool:
    """Re-sent calls against the calls in flight at the kill.

    A call is in flight from its send until its reply is stored: the killed service sent
    ``sent_by_killed`` calls (all the model server saw before the restart) and had stored
    ``stored`` replies. The model server's own count (calls it had not answered at the kill)
    leaves out the replies it had sent that the service had not yet read and stored.
    """
    lines = check_jobs(load, url, args.jobs)
    in_flight, resent = stats["sent_by_killed"] - stored, stats["resent_after_restart"]
    ratio = resent / in_flight if in_flight else float("inf") if resent else 0.0
    lines.append(
        f"killed with {in_flight} calls in flight ({stats['sent_by_killed']} sent, {stored} "
        f"replies stored; {stats['unfinished_at_kill']} not yet answered by the model "
        f"server) of {stats['calls']} in the run; calls re-sent after the restart {resent} = "
        f"{ratio:.3f} x the bound (<= 1.0) (prompts seen twice in all: {stats['resent']}); "
        f"{load.retried} POSTs retried"
    )
    print("\n".join("  " + line for line in lines))
    return resent <= in_flight and not any(line.startswith("FAILED") for line in lines)


def one_run(args: argparse.Namespace, kill: bool, workers: int, runners: int) -> bool:
    with tempfile.TemporaryDirectory(prefix="bench-service-") as folder:
        model = ModelServer(args.latency, Path(folder))
        service = Service(args, model.base_url, Path(folder), workers, runners=runners)
        try:
            service.start()
            tag = f"{'kill' if kill else 'load'}-{os.getpid()}"
            if not kill:
                load = asyncio.run(run_load(service, args, tag))
                return report_load(load, model.stats(), service.url, args, workers)
            at_calls = args.jobs * args.calls_per_job // 2

            async def both() -> tuple[Load, tuple[float, float, int]]:
                stop = asyncio.create_task(killer(service, model, at_calls))
                load = await run_load(service, args, tag)
                return load, await stop

            load, (kill, restart, stored) = asyncio.run(both())
            return report_kill(load, model.stats(kill, restart), stored, service.url, args)
        finally:
            service.stop()
            model.close()


# -- replicas on PostgreSQL --------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """CPU seconds of a process and its children, live and reaped (0 once it is gone)."""
    tick = os.sysconf("SC_CLK_TCK")
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return 0.0
    own = sum(int(f) for f in fields[11:15]) / tick  # utime, stime, cutime, cstime
    return own + sum(cpu_seconds(int(child)) for child in children)


def postmaster(folder: Path) -> int:
    return int((folder / "data" / "postmaster.pid").read_text().split()[0])


def replicas_run(
    args: argparse.Namespace, replicas: int, pg: Any | None, workers: int
) -> dict[str, Any] | None:
    """One load on ``replicas`` services (SQLite when ``pg`` is None, else a fresh database
    on ``pg``); returns its figures, or None when a job was lost or failed."""
    with tempfile.TemporaryDirectory(prefix="bench-replicas-") as folder:
        model = ModelServer(args.latency, Path(folder))
        database = None if pg is None else pg.new_database()
        services = [
            Service(
                args,
                model.base_url,
                Path(folder),
                workers,
                database,
                f"service-{k}",
                max(args.runners),
            )  # fmt: skip
            for k in range(replicas)
        ]
        try:
            for service in services:
                service.start()
            db_pid = None if pg is None else postmaster(pg.folder)
            before = [cpu_seconds(s.process.pid) for s in services if s.process is not None]
            db_before = 0.0 if db_pid is None else cpu_seconds(db_pid)
            load = Load()
            urls = [s.url for s in services]

            async def run() -> None:
                watcher = asyncio.create_task(watch(urls[0], load, args.jobs))
                tag = f"replicas-{replicas}-{os.getpid()}"
                await clients(urls, load, args.jobs, args.clients, tag, args.think)
                await asyncio.wait_for(watcher, timeout=args.timeout)

            asyncio.run(run())
            after = [cpu_seconds(s.process.pid) for s in services if s.process is not None]
            db_cpu = 0.0 if db_pid is None else cpu_seconds(db_pid) - db_before
            stats = model.stats()
            lines = check_jobs(load, urls[-1], args.jobs)
        finally:
            for service in services:
                service.stop()
            model.close()
    print("\n".join("    " + line for line in lines))
    if any(line.startswith("FAILED") for line in lines):
        return None
    jobs = list(load.jobs.values())
    window = max(j["finished"] for j in jobs) - min(j["created"] for j in jobs)
    per_job = stats["calls"] / len(jobs)
    ideal = replicas * workers * per_job / (3 + ROUNDS) / args.latency
    calls = stats["calls"]
    return {
        "rate": calls / window,
        "ideal": ideal,
        "service_ms": 1000 * (sum(after) - sum(before)) / calls,
        "db_ms": 1000 * db_cpu / calls,
        "p99": percentile(load.latencies, 0.99) * 1000,
        "resent": stats["resent"],
    }


def replicas_report(args: argparse.Namespace) -> bool:
    """SQLite on one server (the anchor), then PostgreSQL with each ``--replicas`` count."""
    from tests.support.pg_server import INSTALL_HINT, PgServer, find_binaries

    binaries = find_binaries()
    if binaries is None:
        raise SystemExit(f"--database postgresql: {INSTALL_HINT}")
    workers = max(args.workers) if len(args.workers) == 1 else 8
    print(
        f"3. replicas: --workers {workers} --runners {max(args.runners)} each, "
        f"{os.cpu_count()} cores (on 2 cores the "
        "figures show the overhead of each replica and of the database, not scaling)"
    )
    pg = PgServer(binaries)
    pg.start()
    rows: list[tuple[str, dict[str, Any] | None]] = []
    try:
        print("  sqlite, 1 server")
        rows.append(("sqlite, 1 server", replicas_run(args, 1, None, workers)))
        for count in args.replicas:
            print(f"  postgresql, {count} replica(s)")
            rows.append((f"postgresql, {count} replica(s)", replicas_run(args, count, pg, workers)))
    finally:
        pg.stop()
    anchor = rows[0][1]
    print(
        "  | store | calls/s | x ideal | x sqlite | CPU ms/call: service + database | POST p99 "
        "| re-sent | bounds |"
    )
    ok = True
    for label, row in rows:
        if row is None:
            print(f"  | {label} | FAILED: lost or failed jobs | | | | | | |")
            ok = False
            continue
        vs = row["rate"] / anchor["rate"] if anchor else float("nan")
        ratio = row["rate"] / row["ideal"]
        failed = replica_failures(ratio, row["p99"], row["resent"])
        print(
            f"  | {label} | {row['rate']:.1f} | {ratio:.3f} "
            f"(ideal {row['ideal']:.0f}) | {vs:.2f} | {row['service_ms']:.2f} + "
            f"{row['db_ms']:.2f} = {row['service_ms'] + row['db_ms']:.2f} | "
            f"{row['p99']:.1f} ms | {row['resent']} | {'; '.join(failed) or 'met'} |"
        )
        ok = ok and not failed
    return ok


def replica_failures(ratio: float, p99: float, resent: int) -> list[str]:
    """The bounds one replicas row misses: the load run's throughput and p99, no re-sent call.

    A row on one 2-core machine shares the cores with the model server, the database and the
    other replicas, so it can miss the throughput bound for want of cores; it is reported as
    missed all the same (the bound is issue 30's), with the figure beside it.
    """
    failed = []
    if ratio < THROUGHPUT_BOUND:
        failed.append(f"calls/s {ratio:.3f} x ideal < {THROUGHPUT_BOUND}")
    if p99 >= P99_BOUND_MS:
        failed.append(f"p99 {p99:.0f} ms >= {P99_BOUND_MS} ms")
    if resent:
        failed.append(f"{resent} calls re-sent")
    return failed


def load_and_kill(args: argparse.Namespace) -> bool:
    """The load runs (each ``--workers`` with each ``--runners``) and the kill run."""
    ok = True
    if args.runs in ("both", "load"):
        most = max(args.runners)
        for workers in args.workers:
            for runners in sorted(args.runners):
                judged = "" if runners == most else " (beside: the bounds are judged on the most)"
                print(f"1. load, --workers {workers} --runners {runners}{judged}")
                met = one_run(args, kill=False, workers=workers, runners=runners)
                ok = (met or runners != most) and ok
    if args.runs in ("both", "kill"):
        workers, runners = max(args.workers), max(args.runners)
        print(
            f"2. load, --workers {workers} --runners {runners}, SIGKILL once, restart on the "
            "same database"
        )
        ok = one_run(args, kill=True, workers=workers, runners=runners) and ok
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument(
        "--workers",
        type=lambda text: [int(w) for w in text.split(",")],
        default=[8, 64],
        help="the service's --workers, one load run each (comma-separated)",
    )
    parser.add_argument(
        "--runners",
        type=lambda text: [int(r) for r in text.split(",")],
        default=[1, 2],
        help="the service's --runners, one load run each per --workers (comma-separated); "
        "the bounds are judged on the most",
    )
    parser.add_argument(
        "--think", type=float, default=0.5, help="mean seconds between a client's submits"
    )
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--runs", choices=["both", "load", "kill"], default="both")
    parser.add_argument("--timeout", type=float, default=900, help="seconds for a run")
    parser.add_argument(
        "--calls-per-job", type=int, default=10, help="to time the kill at half the calls"
    )
    parser.add_argument(
        "--serve", default=f"{sys.executable} -m debate serve", help="the service's command"
    )
    parser.add_argument(
        "--replicas",
        type=int,
        nargs="+",
        help="with --database postgresql: run these numbers of replicas on one PostgreSQL, "
        "beside SQLite on one server, instead of the load and kill runs",
    )
    parser.add_argument("--database", choices=["sqlite", "postgresql"], default="sqlite")
    args = parser.parse_args()
    print(
        f"{args.jobs} debate jobs, {args.clients} clients (think {args.think} s), model "
        f"server latency {args.latency * 1000:.0f} ms"
    )
    if args.database == "postgresql":
        args.replicas = args.replicas or [1]
        ok = replicas_report(args)
        print("all bounds met" if ok else "A BOUND FAILED")
        return 0 if ok else 1
    ok = load_and_kill(args)
    print("all bounds met" if ok else "A BOUND FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
