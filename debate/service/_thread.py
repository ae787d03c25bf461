"""The runner on its own thread and event loop, so that answering HTTP never waits on jobs.

Sharing one event loop, a submit waited behind every job's work that was ready to run
(prompts, parsing, statistics, store writes): measured with ``benchmarks/bench_service.py``
(64 jobs running against a 200 ms model server, 50 clients submitting), p50 413 ms and p99
1.46 s per POST. On its own loop the API answers between the runner's steps, at the
interpreter's switch interval. The runner keeps its loop to itself: its models' HTTP
clients, its tasks and its timers all live there.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable
from typing import Any

from debate.service._models import Job
from debate.service._routes import JobRunnerLike

logger = logging.getLogger(__name__)

START_TIMEOUT_S = 60.0
"""Seconds the runner may take to start (it requeues what a killed process left running)."""


class RunnerThread:
    """A :class:`JobRunnerLike` that runs another on a thread of its own.

    ``on_finished`` (the app's webhook hook) is called on the app's loop, where the webhook
    sender's client lives; the runner's own ``on_finished``, if it has one, stays on its loop.
    """

    def __init__(self, runner: JobRunnerLike) -> None:
        self.runner = runner
        self.on_finished: Callable[[Job], Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    async def start(self) -> None:
        """Start the thread and the runner in it; raise what the runner's start raised."""
        app_loop = asyncio.get_running_loop()
        if self.runner.on_finished is None and self.on_finished is not None:
            self.runner.on_finished = self._relay(app_loop, self.on_finished)
        started: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(
            target=asyncio.run, args=(self._serve(started),), name="debate-runner", daemon=True
        )
        self._thread.start()
        await asyncio.wait_for(asyncio.wrap_future(started), START_TIMEOUT_S)

    async def stop(self) -> None:
        """Stop the runner (its running jobs go back to the queue) and join its thread."""
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)
            self._thread = None

    def wake(self) -> None:
        """Tell the runner to look at the queue now (from any thread)."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.runner.wake)

    def cancel(self, job_id: str) -> Job | None:
        """Cancel on the runner's loop; blocks the calling thread (not the app's loop)."""
        if self._loop is None or self._loop.is_closed():
            return self.runner.cancel(job_id)

        async def cancel() -> Job | None:
            return self.runner.cancel(job_id)

        return asyncio.run_coroutine_threadsafe(cancel(), self._loop).result(START_TIMEOUT_S)

    async def _serve(self, started: concurrent.futures.Future[None]) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        try:
            await self.runner.start()
        except BaseException as exc:
            started.set_exception(exc)
            return
        started.set_result(None)
        try:
            await self._stopping.wait()
        finally:
            await self.runner.stop()

    @staticmethod
    def _relay(
        loop: asyncio.AbstractEventLoop, hook: Callable[[Job], Any]
    ) -> Callable[[Job], None]:
        """``hook`` called on ``loop``; its failure is logged there, never the job's."""

        def relay(job: Job) -> None:
            async def call() -> None:
                try:
                    returned = hook(job)
                    if asyncio.iscoroutine(returned):
                        await returned
                except Exception:
                    logger.exception("on_finished failed for job %s", job.id)

            asyncio.run_coroutine_threadsafe(call(), loop)

        return relay
