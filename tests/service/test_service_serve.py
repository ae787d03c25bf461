"""``debate serve`` as a user runs it: a real process (uvicorn, its runner process) on
127.0.0.1, driven over HTTP, killed with SIGKILL and started again on the same database.

The other service tests build the app in-process with test doubles; this one is the shipped
command end to end against an OpenAI-compatible test server, where jobs run in the runner
process and webhooks are sent from it.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest

from debate.service._process import RUNNER_NICE
from debate.service._webhooks import SIGNATURE_HEADER, verify
from tests.service.test_service_http import Receiver
from tests.support import ROOT
from tests.support.helpers import free_port
from tests.support.openai_server import FakeOpenAIServer, empty_first_try, is_reask

SECRET = "serve-webhook-secret"


class Served:
    """``python -m debate serve`` on a port of its own, with a log; restartable.

    ``database`` defaults to a SQLite file in ``tmp``; ``extra`` flags follow the common
    ones (default: this file's webhook flags). The replica tests run several on one
    PostgreSQL database.
    """

    def __init__(
        self,
        tmp: Path,
        base_url: str,
        *,
        database: str | None = None,
        name: str = "serve",
        workers: int = 3,
        extra: tuple[str, ...] = (
            "--webhook-secret-env", "SERVE_HOOK_SECRET", "--allow-private-webhooks",
        ),
    ) -> None:  # fmt: skip
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = tmp / "panel.toml"
        config.write_text("arguments = 1\nrounds = 0\nprovider_retries = 0\n", encoding="utf-8")
        self.args = [
            sys.executable, "-m", "debate", "serve",
            "--port", str(self.port),
            "--database", database or str(tmp / "service.sqlite"),
            "--config", str(config),
            "--model", "m", "--base-url", base_url, "--api-key-env", "",
            "--workers", str(workers),
            *extra,
        ]  # fmt: skip
        self.env = {**os.environ, "SERVE_HOOK_SECRET": SECRET}
        self.log_path = tmp / f"{name}.log"
        self.log = self.log_path.open("ab")
        self.process: subprocess.Popen[bytes] | None = None

    def launch(self) -> None:
        """Start the process without waiting for it to be ready."""
        self.process = subprocess.Popen(
            self.args, cwd=ROOT, env=self.env, stdout=self.log, stderr=self.log
        )

    def ready(self, timeout: float = 60) -> None:
        """Wait until ``/readyz`` answers 200; fail with the log's tail if it never does."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None and self.process.poll() is None, self.tail()
            try:
                if httpx.get(self.url + "/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"the server was not ready in {timeout:.0f} s: {self.tail()}")

    def start(self) -> None:
        self.launch()
        self.ready()

    def tail(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")[-3000:]

    def children(self) -> list[int]:
        assert self.process is not None
        pid = self.process.pid
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> int:
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(30)
        self.log.close()
        return code


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def nice(pid: int) -> int:
    """A process's nice value (field 19 of its stat)."""
    return int(Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[16])


def stored(database: Path) -> int:
    with closing(sqlite3.connect(database)) as db:
        return int(db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])


def key(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"], sort_keys=True)


def connected_to(pids: list[int], port: int) -> set[int]:
    """The processes among ``pids`` with a TCP connection open to 127.0.0.1:``port``."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[2].split(":")[1], 16) == port:  # the remote address's port
            inodes.add(f"socket:[{fields[9]}]")
    found = set()
    for pid in pids:
        try:
            links = {os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()}
        except OSError:
            continue
        if links & inodes:
            found.add(pid)
    return found


@pytest.mark.parametrize("runners", [1, 2])
def test_serve_survives_sigkill_and_finishes_every_job_sending_webhooks(
    tmp_path: Path, runners: int
) -> None:
    """With ``--runners 2`` both runner processes run jobs, die with the server, and the
    restarted server requeues their jobs once: every job done once, no call paid twice."""
    receiver = Receiver()
    with FakeOpenAIServer(latency=0.3) as model:
        hooks = ("--webhook-secret-env", "SERVE_HOOK_SECRET", "--allow-private-webhooks")
        served = Served(
            tmp_path, model.base_url, workers=4, extra=(*hooks, "--runners", str(runners))
        )
        served.start()
        try:
            server_nice = nice(served.process.pid) if served.process else 0
            # the runners yield the CPU to the server (the other child: multiprocessing's tracker)
            runner = [p for p in served.children() if nice(p) == min(19, server_nice + RUNNER_NICE)]
            assert len(runner) == runners, "each runner runs in a process of its own"
            with httpx.Client(base_url=served.url, timeout=10) as client:
                ids = []
                for i in range(6):
                    body = {"topic": f"Should team {i} adopt plan {i}?", "webhook": receiver.url}
                    answer = client.post(
                        "/v1/debates", json=body, headers={"Idempotency-Key": f"k{i}"}
                    )
                    assert answer.status_code == 202
                    ids.append(answer.json()["id"])
            deadline = time.monotonic() + 60
            while len(model.records) < 10:  # some calls answered, others in flight
                assert time.monotonic() < deadline
                time.sleep(0.01)
            port = int(model.base_url.split(":")[2].split("/")[0])
            assert connected_to(runner, port) == set(runner), "every runner calls the model"
            served.kill()
            end = time.monotonic() + 10
            while any(running(pid) for pid in runner):  # the runner goes with the server
                assert time.monotonic() < end, "the runner process outlived the server"
                time.sleep(0.01)
            sent = len(model.records) + model.in_flight
            in_flight = sent - stored(tmp_path / "service.sqlite")
            restart = time.monotonic()
            served.start()
            with httpx.Client(base_url=served.url, timeout=10) as client:
                retried = client.post(  # a retried POST after the restart: the same job
                    "/v1/debates",
                    json={"topic": "Should team 0 adopt plan 0?", "webhook": receiver.url},
                    headers={"Idempotency-Key": "k0"},
                )
                assert retried.status_code == 202 and retried.json()["id"] == ids[0]
                deadline = time.monotonic() + 120
                jobs: list[dict[str, Any]] = []
                while time.monotonic() < deadline:
                    jobs = [client.get(f"/v1/jobs/{i}").json() for i in ids]
                    if all(job["status"] in ("done", "failed", "cancelled") for job in jobs):
                        break
                    time.sleep(0.2)
                streams = [client.get(f"/v1/jobs/{i}/events").text for i in ids]
        finally:
            code = served.stop()
        before = Counter(key(r.body) for r in model.records if r.start < restart)
        # The restarted service's calls, on connections it opened: a request the killed runner
        # had sent can still be read by the model server after the kill.
        after = Counter(key(r.body) for r in model.records if r.connected >= restart)
    # uvicorn stops gracefully on SIGTERM, then exits by the signal it caught.
    assert code in (0, -signal.SIGTERM)
    log = (tmp_path / "serve.log").read_text(encoding="utf-8")
    assert "runner stopped" in log and "Traceback" not in log.split("Started server process")[-1]
    assert [job["status"] for job in jobs] == ["done"] * 6, [job.get("error") for job in jobs]
    assert all(
        job["result"]["topic"] == f"Should team {i} adopt plan {i}?" for i, job in enumerate(jobs)
    )
    # Only calls in flight at the kill (sent, reply not stored) are sent again.
    resent = sum(1 for k in after if k in before)
    assert resent <= in_flight, (resent, in_flight)
    assert max(after.values()) == 1 and max(before.values()) == 1
    # The jobs the killed runner had running went back to the queue, and said so.
    assert sum("event: requeued" in stream for stream in streams) >= 1, streams[0]
    # Each job's webhook comes from the runner process, signed, once the job is done.
    deadline = time.monotonic() + 10
    while len({json.loads(b)["id"] for _, b in receiver.posts}) < 6 and time.monotonic() < deadline:
        time.sleep(0.05)
    receiver.close()
    hooked = {json.loads(body)["id"] for _, body in receiver.posts}
    assert hooked == set(ids)
    for headers, body in receiver.posts:
        assert verify(SECRET.encode(), body, headers[SIGNATURE_HEADER])


def _finished(client: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    """Submit a debate and wait for its job to end."""
    answer = client.post("/v1/debates", json=body)
    assert answer.status_code == 202, answer.text
    job_id = answer.json()["id"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        job: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").json()
        if job["status"] in ("done", "failed", "cancelled"):
            return job
        time.sleep(0.1)
    raise AssertionError("the job did not end in 120 s")


def test_a_job_whose_every_call_needed_a_re_ask_is_replayed_after_sigkill_and_restart(
    tmp_path: Path,
) -> None:
    """Issue 28 item 1 in the service: every call's first try is empty, so every call needs a
    re-ask. After SIGKILL and a restart on the same database, the same job (same topic and
    seed) sends 0 requests and has the same result."""
    body = {"topic": "Should team 7 adopt plan 7?", "config": {"seed": 11}}
    with FakeOpenAIServer(responder=empty_first_try) as model:
        served = Served(tmp_path, model.base_url)
        served.start()
        try:
            with httpx.Client(base_url=served.url, timeout=10) as client:
                first = _finished(client, body)
            sent = len(model.records)
            served.kill()
            served.start()
            with httpx.Client(base_url=served.url, timeout=10) as client:
                second = _finished(client, body)
            again = len(model.records) - sent
        finally:
            served.stop()
    assert first["status"] == second["status"] == "done", (first["error"], second["error"])
    assert first["id"] != second["id"]  # a new job, not the first one's record
    assert sent > 0 and sum(is_reask(r.body) for r in model.records) * 2 == sent
    assert again == 0
    assert second["result"] == first["result"]
