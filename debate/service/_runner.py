"""The service's job runner: claims queued jobs and runs them through the package API.

One runner per process and database. It shares one model pool, one limiter and one
response cache across all its jobs (as a batch shares them across items), so an
endpoint's rate limit holds over every job, and a job re-run after a crash (SIGKILL,
power loss) replays from the cache every call that had completed: the job's seed was fixed
at submit, so its calls have the same cache keys the second time.

A job's failure is the job's: it is recorded as a :class:`JobError` with the kind and the
one-line message the CLI would print, and the runner goes on with the others.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from pydantic import ValidationError

from debate.api import judge_transcript, run_debate
from debate.council import run_council
from debate.exceptions import (
    DebateError,
)
from debate.judgments import Decided, decide_judgments, read_judgment_rows
from debate.models import Model
from debate.models.test import TestModel
from debate.records import Candidate, RunConfig, error_field, error_kind, one_line
from debate.runtime import Event, ModelPool, Planned, Run, event_record, planned_calls
from debate.service._backend import JobBackend
from debate.service._models import (
    CouncilRequest,
    DebateRequest,
    DecisionRequest,
    Job,
    JobError,
    JobRequest,
    JudgementRequest,
    PanelOverrides,
    ServiceSettings,
)
from debate.service._requests import changes_panel, with_overrides

logger = logging.getLogger(__name__)

FLUSH_S = 0.1
"""Seconds between writes of the running jobs' events (one transaction each)."""

FinishedHook = Callable[[Job], Any]


@dataclass(frozen=True)
class ModelBundle:
    """Models given to the runner instead of the server's (tests, embedding apps).

    Each field is passed to the package API as the argument of the same name; ``None``
    leaves the config's model (built once in the runner's pool).
    """

    model: Model | None = None
    """Every debater, judge and reviewer."""
    pro: Model | None = None
    con: Model | None = None
    judges: Mapping[str, Model] | None = None
    """Model per judge name (also the council's reviewers when ``reviewers`` is None)."""
    reviewers: Mapping[str, Model] | None = None


def job_error(exc: BaseException, *, any_field: bool = False) -> JobError:
    """The error a failed job records: the CLI's kind, its one-line message and field.

    ``any_field``: a message's leading name is its field even when it is not a config
    field (an MCP tool's argument: ``topic: ...``, ``candidates: ...``).
    """
    message = one_line(exc)
    field = error_field(exc, message, any_field=any_field)
    return JobError(kind=error_kind(exc), message=message, field=field)


def job_config(base: RunConfig, overrides: PanelOverrides) -> RunConfig:
    """The server's config with a job's overrides, errors named as in the HTTP body.

    A job that changes nothing of the panel (only a seed, or nothing) runs on the server's
    own config, checked at start-up and frozen: dumping and validating it again cost about
    1 ms of the runner's CPU per job.
    """
    if not changes_panel(overrides):
        return base
    return with_overrides(base, overrides, prefix="config.")


class JobRunner:
    """Runs the store's queued jobs, ``settings.limits.workers`` at a time.

    Use ``async with JobRunner(...)`` (or :meth:`start` / :meth:`stop`) inside the
    server's event loop; call :meth:`wake` after a submit so the job starts at once
    rather than at the next poll.

    Args:
        store: The jobs.
        settings: The service's limits (``workers``, ``per_token_concurrency``).
        make_models: Called once per job for the models to run it with (test doubles);
            None: the config's models, built once in the runner's shared pool.
        config: The server's run config; a job's ``PanelOverrides`` apply on top.
        run: The machinery every job shares (limiter, prices, budget, track records,
            embedded model file). Without a pool, one is built for ``config`` and closed at
            :meth:`stop`; without a cache, the store's own is used (table ``responses`` of
            its database) and closed at :meth:`stop`. Its event handler is each job's own.
        on_finished: Called with each job that ended (done, failed or cancelled); its
            failure is logged, never the job's.
        poll: Seconds between looks at the store for new jobs and cancel requests.
        recover: Requeue at :meth:`start` what a killed process left running. False where
            another runner may already hold jobs of the same store (the second and later
            runner processes of one server: the server recovers once, before any starts).
    """

    def __init__(
        self,
        store: JobBackend,
        settings: ServiceSettings,
        *,
        make_models: Callable[[], ModelBundle] | None = None,
        config: RunConfig,
        run: Run | None = None,
        on_finished: FinishedHook | None = None,
        poll: float = 0.2,
        recover: bool = True,
    ) -> None:
        self.store = store
        self._recover = recover
        self.settings = settings
        self.make_models = make_models
        self.config = config
        given = run or Run()
        self._owned = (given.pool is None, given.cache is None)
        """Whether the pool and the cache are the runner's own, to close at :meth:`stop`."""
        self.run = given.with_(
            pool=given.pool or ModelPool(config, model_path=given.model_path),
            cache=given.cache or store.open_cache(),
        )
        """The machinery of every job: one pool, one cache, one limiter for them all."""
        self.on_finished = on_finished
        self.poll = poll
        self.recovered = 0
        """Jobs :meth:`start` put back in the queue (left running by a killed process)."""
        self._pending: list[tuple[str, str, dict[str, Any], float]] = []
        """Events recorded and not yet written (see :meth:`_flush`)."""
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="debate-events")
        """Writes the events, one batch at a time in the order given (FIFO). A cancel
        made in the store by another process may precede up to :data:`FLUSH_S` of the
        job's progress; one made through :meth:`cancel` follows it."""
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._cancelling: set[str] = set()
        self._lost: set[str] = set()
        """Jobs whose lease another runner took over: stopped here, recorded by nobody here."""
        self._renewed = 0.0
        self._wake = asyncio.Event()
        self._loop_task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> JobRunner:
        await self.start()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    @property
    def _pool(self) -> ModelPool:
        assert self.run.pool is not None  # set in __init__
        return self.run.pool

    @property
    def running(self) -> list[str]:
        """Ids of the jobs this runner is running now."""
        return list(self._tasks)

    async def start(self) -> None:
        """Build the models, requeue what a killed process left running, take jobs.

        The models are built first (in a thread) so that the first jobs do not import the
        backend and load its certificates while the app answers POSTs: that took some
        0.7 s of CPU and showed as the slowest submits. A missing key fails the start.
        """
        if self.make_models is None:
            await asyncio.to_thread(self._pool.prepare, self.config)
            await self._warm_up()
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="debate-events")
        self.recovered = self.store.recover() if self._recover else 0
        if self.recovered:
            logger.info("requeued %d job(s) left running by a stopped process", self.recovered)
        self._loop_task = asyncio.create_task(self._loop(), name="debate-service-runner")

    async def _warm_up(self) -> None:
        """One scripted debate on the server's config, before the first job.

        Templates compile and the statistics' code runs for the first time in it, not in
        the first jobs: those first uses took about 0.2 s of CPU together, and the POSTs
        that arrived meanwhile were the slowest of a benchmark run. No model is called.
        """
        started = time.perf_counter()
        await run_debate("Warm-up", model=TestModel(seed=0), config=self.config, seed=0)
        logger.info("warmed up in %.2fs", time.perf_counter() - started)

    async def stop(self) -> None:
        """Stop taking jobs; the jobs running go back to the queue for the next start."""
        if self._loop_task is not None:
            self._loop_task.cancel()
            await asyncio.gather(self._loop_task, return_exceptions=True)
            self._loop_task = None
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._flush()
        own_pool, own_cache = self._owned
        if own_pool:
            await self._pool.aclose()
        self._writer.shutdown(wait=True)
        if own_cache and self.run.cache is not None:
            self.run.cache.close()

    def wake(self) -> None:
        """Look at the queue now (a job was submitted, or a cancel requested)."""
        self._wake.set()

    def cancel(self, job_id: str) -> Job | None:
        """Cancel a job: in the store, and at once if this runner is running it."""
        self._flush_now()  # what the job did before the cancel is recorded before it
        job = self.store.cancel(job_id)
        if job is not None and job.status == "running" and job_id in self._tasks:
            self._cancelling.add(job_id)
            self._tasks[job_id].cancel()
        return job

    async def _loop(self) -> None:
        """Claim what fits, stop what was cancelled, wait for a wake-up or the poll.

        The wait uses ``asyncio.timeout``: Python 3.11's ``wait_for`` can lose a
        cancellation that arrives as the awaited event is set, which left :meth:`stop`
        waiting forever.
        """
        limits = self.settings.limits
        while True:
            self._wake.clear()
            free = limits.workers - len(self._tasks)
            claimed: list[tuple[Job, JobRequest]] = []
            try:
                claimed = self.store.claim(free, per_token=limits.per_token_concurrency)
                self._stop_cancelled()
            except Exception:  # the store is busy or broken: log, and try again at the next poll
                logger.exception("the job store failed; retrying in %.1fs", self.poll)
            for job, request in claimed:
                task = asyncio.create_task(self._run(job, request), name=f"job-{job.id}")
                self._tasks[job.id] = task
                task.add_done_callback(self._done)
            try:  # a finished job, a submit (wake) or the poll: look again
                async with asyncio.timeout(FLUSH_S if self._pending else self.poll):
                    await self._wake.wait()  # not wait_for: see the note above
            except TimeoutError:
                pass
            await self._flush()
            await self._renew()

    async def _renew(self) -> None:
        """Renew the leases of the running jobs every third of the lease (PostgreSQL).

        In the writer thread, off the loop and after the events before it. A job whose
        lease was lost (this runner stalled past it, and another took the job over) is
        stopped here without a word to the store: the other runner records its end.
        """
        lease = self.store.lease
        if lease is None or not self._tasks or time.monotonic() - self._renewed < lease / 3:
            return
        self._renewed = time.monotonic()
        ids = list(self._tasks)
        try:
            loop = asyncio.get_running_loop()
            lost = await loop.run_in_executor(self._writer, self.store.renew, ids)
        except Exception:  # the database is away: the leases run on; try at the next turn
            logger.exception("could not renew the leases of %d job(s)", len(ids))
            return
        for job_id in lost:
            task = self._tasks.get(job_id)
            if task is not None and job_id not in self._lost:
                logger.warning("job %s: its lease was taken over; stopping it here", job_id)
                self._lost.add(job_id)
                task.cancel()

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.pop(task.get_name().removeprefix("job-"), None)
        self._wake.set()

    def _stop_cancelled(self) -> None:
        for job_id in self.store.cancel_requested(list(self._tasks)):
            if job_id not in self._cancelling:
                self._cancelling.add(job_id)
                self._tasks[job_id].cancel()

    async def _run(self, job: Job, request: JobRequest) -> None:
        """Run one job and record how it ended; nothing it raises reaches the runner."""
        ended: Job | None
        try:
            result, outcome = await self._execute(job, request)
            await self._flush()  # the job's events before its end
        except asyncio.CancelledError:
            if job.id in self._lost:  # another runner holds it now and will record its end
                self._lost.discard(job.id)
                return
            if job.id not in self._cancelling:  # the runner is stopping: run it next time
                self.store.requeue(job.id)
                raise
            self._cancelling.discard(job.id)
            await self._flush()
            ended = await self._written(self.store.cancelled, job.id)
        except Exception as exc:  # one job's failure is its own, recorded with its kind
            await self._flush()
            error = job_error(exc)
            if not isinstance(exc, (DebateError, ValidationError, OSError)):
                logger.exception("job %s failed unexpectedly", job.id)
            ended = await self._written(self.store.fail, job.id, error)
        else:
            ended = await self._written(self.store.finish, job.id, result, outcome)
        if ended is not None and self.on_finished is not None:
            await self._hook(ended)

    async def _written(self, end: Callable[..., Job | None], *args: Any) -> Job | None:
        """A job's end, written by the writer thread after the job's events.

        Off the loop: serialising the result and the write took some 4 ms a job there
        (measured under cProfile), a pause of every other job's calls.
        """
        return await asyncio.get_running_loop().run_in_executor(self._writer, end, *args)

    async def _hook(self, job: Job) -> None:
        try:
            returned = self.on_finished(job) if self.on_finished is not None else None
            if asyncio.iscoroutine(returned):
                await returned
        except Exception:  # a webhook that fails must not fail the job
            logger.exception("on_finished failed for job %s", job.id)

    async def _execute(self, job: Job, request: JobRequest) -> tuple[dict[str, Any], str | None]:
        """The job's result as JSON, and its outcome (debate and judgement jobs)."""
        if isinstance(request, DecisionRequest):
            decided = await asyncio.to_thread(decide_rows, request, self.config)
            return decided.model_dump(mode="json"), None
        cfg = job_config(self.config, request.config)
        record = self._recorder(job.id)
        run = self.run.with_(on_event=record)
        seed = request.config.seed
        if isinstance(request, DebateRequest):
            record(Planned(command="run", total=planned_calls(cfg, debate=True)))
            models = self._models(debate=True)
            result = await run_debate(request.topic, config=cfg, seed=seed, run=run, **models)
        elif isinstance(request, JudgementRequest):
            record(Planned(command="judge", total=planned_calls(cfg, debate=False)))
            transcript = request.transcript
            result = await judge_transcript(
                transcript, config=cfg, seed=seed, run=run, **self._models()
            )
        else:
            council = await self._council(request, cfg, run, record)
            return council.model_dump(mode="json"), None
        return result.model_dump(mode="json"), result.decision.outcome

    async def _council(
        self,
        request: CouncilRequest,
        cfg: RunConfig,
        run: Run,
        record: Callable[[Event], None],
    ) -> Any:
        bundle = self.make_models() if self.make_models is not None else ModelBundle()
        reviewers = bundle.reviewers or bundle.judges
        record(Planned(command="council", total=len(reviewers or cfg.judges)))
        candidates = [
            Candidate(id=c.id, text=c.text, author_model=c.model) for c in request.candidates
        ]
        return await run_council(
            request.question,
            candidates,
            reviewers=reviewers,
            model=bundle.model,
            config=cfg,
            seed=request.config.seed,
            run=run,
        )

    def _models(self, *, debate: bool = False) -> dict[str, Any]:
        if self.make_models is None:
            return {}
        bundle = self.make_models()
        models: dict[str, Any] = {"model": bundle.model, "judges": bundle.judges}
        if debate:
            models |= {"pro": bundle.pro, "con": bundle.con}
        return models

    def _recorder(self, job_id: str) -> Callable[[Event], None]:
        """Each package event of a job, stored as the CLI's ``--progress jsonl`` writes it."""

        def record(event: Event) -> None:
            data = event_record(event)
            kind = data.pop("type")
            data.pop("ts")
            self._pending.append((job_id, kind, data, time.time()))

        return record

    async def _flush(self) -> None:
        """Write the events recorded so far, in one transaction off the loop.

        Events are written every :data:`FLUSH_S` while jobs run and before a job ends, so
        an event stream is at most that late and a job's events always precede its end.
        Batches go through one writer thread, so they are written in the order taken.
        """
        if self._pending:
            batch, self._pending = self._pending, []
            await asyncio.get_running_loop().run_in_executor(self._writer, self._write, batch)

    def _flush_now(self) -> None:
        """:meth:`_flush`, waited for on the loop (before a write that must follow it)."""
        if self._pending:
            batch, self._pending = self._pending, []
            self._writer.submit(self._write, batch).result()

    def _write(self, batch: list[tuple[str, str, dict[str, Any], float]]) -> None:
        try:
            self.store.append_events(batch)
        except Exception:  # progress only: the job's result does not depend on it
            logger.exception("%d progress event(s) could not be written", len(batch))


def decide_rows(request: DecisionRequest, config: RunConfig) -> Decided:
    """``debate decide`` on the request's rows, with the server's thresholds.

    The rows are read as a JSON Lines file's lines, so the checks and messages are the
    CLI's; a message names the rows as ``rows line N`` (the N-th row, from 1).
    """
    return decide_judgments(
        read_judgment_rows(request.rows, scale=request.scale),
        weights=request.weights,
        thresholds=config.thresholds,
        dimension=request.dimension,
        seed=request.seed,
    )
