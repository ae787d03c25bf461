"""The runner in a process of its own, beside the HTTP server (``debate serve``).

On a thread of the server's process, the runner and the app shared the interpreter lock:
measured with ``benchmarks/bench_service.py``, a POST waited behind the runner's CPU
(prompts, replies, statistics) for up to 0.4 s once 64 jobs ran, and the runner had one
core at most. In its own process it has a core, and the app answers from the other.

The two share nothing but the database (a SQLite file, or PostgreSQL): the app submits and
reads jobs there, the runner claims and finishes them. A pipe carries the app's wake-ups (a
job was submitted or a cancel requested: look now rather than at the next poll) and its stop.
The runner runs at a lower CPU priority (:data:`RUNNER_NICE`), so a submit never waits for
the CPU behind it. The runner process dies with the app: when the pipe closes without a stop
(the app was killed), it exits at once, leaving its jobs ``running`` for the next start's
recovery (on PostgreSQL: for another replica, once their lease expires), as a SIGKILL of one
process would. Webhooks are sent from the runner process, which sees each job end.

With ``--runners N`` the server starts N runner processes, each with its share of
``--workers``. One runner runs every job's Python (prompts, replies, statistics, the job's
events) on one core; measured with ``benchmarks/bench_service.py`` on a 2-core machine at 64
workers, one runner held a core and the calls took 15-50 ms longer than the model server's
latency while they waited for it. An endpoint's ``rpm``/``tpm`` is kept by each process for
its own calls, so with more than one runner it is refused rather than multiplied (as by
``debate batch --engine processes``); run one runner, or divide the limit yourself across
replicas.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from typing import Any

from debate._gc import freeze_survivors
from debate.exceptions import ConfigurationError
from debate.records import RunConfig
from debate.runtime import Run
from debate.service._backend import JobBackend, open_store
from debate.service._database import database_target
from debate.service._models import Job, ServiceSettings
from debate.service._runner import JobRunner
from debate.service._webhooks import WebhookSender, send_webhook

logger = logging.getLogger(__name__)

START_TIMEOUT_S = 120.0
"""Seconds the runner process may take to start (imports, models, recovery, warm-up)."""
STOP_TIMEOUT_S = 30.0
"""Seconds it may take to stop (its running jobs go back to the queue) before it is killed."""
WAKE, STOP = b"w", b"s"
RUNNER_NICE = 5
"""How much lower the runner process's CPU priority is than the server's. Jobs are background
work; a POST is waited for: the runner keeps a core busy, and at the same priority a submit
waited for the CPU behind it (``benchmarks/bench_service.py``, 64 workers, 300 jobs, load 5
from other processes: p99 63-213 ms; 47-92 ms at 5, 27-119 ms at 10). 5 rather than 10: the
runner keeps a third of a normal process's share against other programs on a busy host, and
it still takes every cycle the server leaves."""


@dataclass(frozen=True)
class RunnerSpec:
    """What the runner process is built from (picklable: the process is spawned)."""

    settings: ServiceSettings
    config: RunConfig
    model_path: str | None = None
    allow_private_webhooks: bool = False
    log_format: str | None = None
    """The app's log format, for the process's own handler (None: leave logging alone)."""

    def __post_init__(self) -> None:
        check_runners(self.settings, self.config)


class RunnerProcess:
    """A :class:`~debate.service._routes.JobRunnerLike` whose jobs run in child processes.

    ``settings.limits.runners`` processes (one by default), each running its share of
    ``workers`` (:meth:`~debate.service._models.ServiceLimits.split_workers`). They share
    the database alone: each claims jobs in its own write transaction, so no two take the
    same job, and the per-token limit is counted in the database, over all of them. The
    jobs a killed server left running are requeued here, once, before any runner starts:
    a runner that recovered while another already ran jobs would requeue those too.
    """

    def __init__(self, spec: RunnerSpec, store: JobBackend) -> None:
        self.spec = spec
        self.store = store
        self.on_finished: Callable[[Job], Any] | None = None
        """Unused: the runner processes send the webhooks (they see the jobs end)."""
        self._children: list[_Child] = []

    async def start(self) -> None:
        """Requeue what a killed server left running, spawn the runners, wait until they run.

        Raises what a runner's start raised (the others are stopped first).
        """
        recovered = await asyncio.to_thread(self.store.recover)
        limits = self.spec.settings.limits
        self._children = [
            _Child(replace(self.spec, settings=_share(self.spec.settings, workers)))
            for workers in limits.split_workers()
        ]
        answers = await asyncio.gather(*(child.start() for child in self._children))
        failed = [answer for answer in answers if answer[0] != "ready"]
        if failed:
            await self.stop()
            raise ConfigurationError(str(failed[0][1]))
        logger.info(
            "runner process%s %s started (%d job(s) requeued)",
            "es" if len(self._children) > 1 else "",
            ", ".join(str(child.pid) for child in self._children),
            recovered,
        )

    async def stop(self) -> None:
        """Ask the runners to stop (their running jobs are requeued); kill any that hang."""
        children, self._children = self._children, []
        await asyncio.gather(*(child.stop() for child in children))

    def wake(self) -> None:
        """Tell every runner to look at the queue now (whichever has room claims)."""
        for child in self._children:
            child.send(WAKE)

    def cancel(self, job_id: str) -> Job | None:
        """Record the cancel in the store; the runner holding the job stops it (now)."""
        job = self.store.cancel(job_id)
        self.wake()
        return job


def check_runners(settings: ServiceSettings, config: RunConfig) -> None:
    """Refuse a rate limit that each of several runner processes would keep in full.

    Checked as a :class:`RunnerSpec` is made, so ``debate serve`` refuses before it makes
    the database, and a program that builds the spec itself is refused alike.
    """
    runners = settings.limits.runners
    if runners == 1:
        return
    for name, endpoint in config.endpoints.items():
        if endpoint.rpm is not None or endpoint.tpm is not None:
            raise ConfigurationError(
                f"--runners {runners}: endpoint {name} has rpm/tpm, which each runner process "
                "would keep in full for its own calls; use --runners 1 (one process keeps the "
                "limit over every job)",
                field="--runners",
            )


def _share(settings: ServiceSettings, workers: int) -> ServiceSettings:
    """The settings of one runner process: its share of the workers, and one runner."""
    limits = settings.limits.model_copy(update={"workers": workers, "runners": 1})
    return settings.model_copy(update={"limits": limits})


class _Child:
    """One runner process and the pipe to it."""

    def __init__(self, spec: RunnerSpec) -> None:
        self.spec = spec
        self._process: multiprocessing.process.BaseProcess | None = None
        self._pipe: Connection | None = None
        self._sending = threading.Lock()

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    async def start(self) -> tuple[str, Any]:
        """Spawn the runner; its first answer (``ready``, or ``error`` and the reason)."""
        context = multiprocessing.get_context("spawn")
        ours, theirs = context.Pipe()
        process = context.Process(
            target=runner_main, args=(self.spec, theirs), name="debate-runner", daemon=True
        )
        process.start()
        theirs.close()
        self._process, self._pipe = process, ours
        return await asyncio.to_thread(_receive, ours, START_TIMEOUT_S)

    async def stop(self) -> None:
        """Ask the runner to stop (its running jobs are requeued); kill it if it hangs."""
        if self._process is None:
            return
        self.send(STOP)
        process, self._process = self._process, None
        await asyncio.to_thread(process.join, STOP_TIMEOUT_S)
        if process.is_alive():
            logger.warning("the runner process did not stop in %.0fs; killing it", STOP_TIMEOUT_S)
            process.kill()
            await asyncio.to_thread(process.join, 5)
        if self._pipe is not None:
            self._pipe.close()
            self._pipe = None

    def send(self, message: bytes) -> None:
        pipe = self._pipe
        if pipe is None:
            return
        with self._sending:
            try:
                pipe.send_bytes(message)
            except OSError:  # the runner is gone; its jobs wait for the next start
                logger.warning("the runner process is not running")


def _receive(pipe: Connection, timeout: float) -> tuple[str, Any]:
    if not pipe.poll(timeout):
        return ("error", f"runner: did not start in {timeout:.0f}s")
    try:
        answer: tuple[str, Any] = pipe.recv()
    except EOFError:
        return ("error", "runner: its process exited while starting; see the log above")
    return answer


def runner_main(spec: RunnerSpec, pipe: Connection) -> None:
    """The runner process: run jobs until told to stop or the app is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the app, which stops us
    os.nice(RUNNER_NICE)
    if spec.log_format is not None:
        from debate.service._http import log_handler

        root = logging.getLogger()
        root.handlers[:] = [log_handler(spec.log_format, sys.stderr)]
        root.setLevel(logging.INFO)
    asyncio.run(_serve(spec, pipe))


async def _serve(spec: RunnerSpec, pipe: Connection) -> None:
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    settings = spec.settings
    target = database_target(settings.database)
    store = open_store(target, lease=settings.limits.lease_s, connections=4)
    webhooks = _webhooks(spec)
    runner = JobRunner(
        store,
        spec.settings,
        config=spec.config,
        run=Run(model_path=spec.model_path),
        recover=False,  # the server did, before starting its runners (RunnerProcess.start)
    )
    if webhooks is not None:
        sender = webhooks
        runner.on_finished = lambda job: send_webhook(store, sender, job)
    try:
        await runner.start()
    except Exception as exc:  # bad input (a missing key...): the app reports it and exits
        pipe.send(("error", str(exc)))
        return
    # Before the first job runs (start only schedules the loop): a full collection then scans
    # what jobs made, not the imported modules and models (as the app's heap, _app.py).
    freeze_survivors(collect=True)
    pipe.send(("ready", None))

    def readable() -> None:
        try:
            while pipe.poll():
                if pipe.recv_bytes() == STOP:
                    stopping.set()
                else:
                    runner.wake()
        except (EOFError, OSError):  # the app is gone (killed): go as it went
            os._exit(1)

    loop.add_reader(pipe.fileno(), readable)
    try:
        await stopping.wait()
    finally:
        loop.remove_reader(pipe.fileno())
        await runner.stop()
        if webhooks is not None:
            await webhooks.aclose()
        store.close()


def _webhooks(spec: RunnerSpec) -> WebhookSender | None:
    name = spec.settings.webhook_secret_env
    secret = os.environ.get(name, "") if name else ""
    if not secret:
        return None
    return WebhookSender(secret.encode("utf-8"), allow_private=spec.allow_private_webhooks)
