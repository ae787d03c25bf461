"""``debate batch --workers N``: one batch over N processes, when one process's CPU is the limit.

One Python process spends a few milliseconds of CPU per model call, so it tops out at a few
hundred calls per second; a model server (vLLM) can answer more. N worker processes
(:mod:`debate.batch._worker`, started with ``spawn``) each run items with their own client
pool; this process, the parent, hands items out one at a time as workers have room (each
worker gets its share of ``--concurrency``, which stays the number of items in flight in
all), and does what must be one for the batch:

- the one progress line (every worker's calls are counted here) and ``--progress jsonl``;
- the rate limits: it holds the one :class:`~debate.runtime._limiter.RateLimiter` of
  ``--rpm``/``--tpm`` (and of each endpoint with limits) and workers ask it for each call;
- ``results.jsonl``, ``summary.jsonl`` and ``summary.html``, as one process writes them.

The budget is a :class:`~debate.runtime._budget.SharedLedger` that every worker checks and
holds in directly (no round trip per call); the response cache and the run store are the
same SQLite files, opened by each worker (WAL; writers retry a locked file every few ms).

A worker that dies (killed, out of memory) loses no finished item: each item's result.json
is written by the worker before its line is sent, and a re-run skips it. Its items in
flight are recorded as failed (the batch exits 1) and the others go on in the other
workers; once none is left, the items not run are recorded as failed too.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from multiprocessing.context import SpawnContext
from multiprocessing.process import BaseProcess
from pathlib import Path

from debate.batch import (
    BatchItem,
    BatchLine,
    Progress,
    check_concurrency,
    finished_line,
    item_plans,
    write_batch_files,
)
from debate.batch._channel import Channel, Message
from debate.batch._worker import GLOBAL_LIMITER, WorkerSetup, worker_main
from debate.exceptions import ConfigurationError
from debate.records._config import RunConfig
from debate.runtime._budget import Budget, SharedLedger
from debate.runtime._events import ItemFinished
from debate.runtime._limiter import RateLimiter
from debate.runtime._pricing import PriceTable

logger = logging.getLogger(__name__)

MAX_WORKERS = 256
STOP_WAIT_S = 10.0
"""How long a worker may take to close its clients after the last item before it is ended."""


def check_workers(workers: int, concurrency: int) -> None:
    """``--workers``: 1 to :data:`MAX_WORKERS`, and no more than ``--concurrency``."""
    if not 1 <= workers <= MAX_WORKERS:
        raise ConfigurationError(
            f"--workers: {workers} must be at least 1 and at most {MAX_WORKERS} "
            "(1 runs the batch in this process)"
        )
    if workers > concurrency:
        raise ConfigurationError(
            f"--workers: {workers} workers need --concurrency {workers} or more (items in "
            f"flight in all; each worker runs at least one), not {concurrency}"
        )


@dataclass
class _Worker:
    number: int
    share: int
    """Items it may run at once."""
    process: BaseProcess
    channel: Channel
    ready: bool = False
    alive: bool = True
    running: set[str] = field(default_factory=set)


async def run_batch_workers(
    items: list[tuple[str, BatchItem]],
    *,
    config: RunConfig,
    out_dir: Path,
    workers: int,
    concurrency: int = 8,
    limiter: RateLimiter | None = None,
    cache: Path | None = None,
    prices: PriceTable | None = None,
    budget: Budget | None = None,
    seed: int = 0,
    model_path: str | None = None,
    progress: Progress | None = None,
    history: Mapping[str, float] | None = None,
    store: Path | None = None,
) -> list[BatchLine]:
    """Run every item in ``workers`` processes; return one line per item in input order.

    As :func:`debate.batch.run_batch`, with the cache and the store given as paths (each
    worker opens them) and ``budget`` giving only the caps: the workers share a new ledger.
    """
    check_concurrency(concurrency)
    check_workers(workers, concurrency)
    plans = item_plans(items, config, out_dir)
    progress = progress or Progress(len(items))
    lines: dict[str, BatchLine] = {}
    todo = []
    for item_id, item in items:
        done = finished_line(item_id, plans[item_id][0], progress)
        if done is None:
            todo.append((item_id, item))
        else:
            lines[item_id] = done
    context = multiprocessing.get_context("spawn")
    shared = None
    if budget is not None:
        ledger = SharedLedger(context)
        shared = Budget(budget.max_cost_usd, budget.max_tokens, ledger=ledger)
    setup = WorkerSetup(
        number=0,
        config=config,
        checks=_one_of_each(todo, plans),
        plans={i: plans[i] for i, _ in todo},
        seed=seed,
        model_path=model_path,
        cache=cache,
        store=store,
        budget=shared,
        prices=prices,
        limits=None if limiter is None else (limiter.rpm, limiter.tpm),
        history=history,
        forward_all=progress.listener is not None,
        log_level=logging.getLogger().getEffectiveLevel(),
    )
    parent = _Parent(context, setup, todo, progress, lines, limiter)
    try:
        if todo:
            await parent.run(min(workers, len(todo)), concurrency)
    finally:
        parent.end()
        progress.show(force=True)
        ordered = write_batch_files([i for i, _ in items], lines, out_dir)
    if parent.fatal is not None:
        raise ConfigurationError(parent.fatal)
    return ordered


def _one_of_each(
    todo: list[tuple[str, BatchItem]], plans: Mapping[str, tuple[Path, RunConfig]]
) -> list[tuple[str, BatchItem]]:
    """The first item of each config (the batch's, or an item's own) and kind, in order."""
    first: dict[tuple[int, bool], tuple[str, BatchItem]] = {}
    for item_id, item in todo:
        first.setdefault((id(plans[item_id][1]), item.topic is None), (item_id, item))
    return list(first.values())


class _Parent:
    """Starts the workers, hands out items, answers rate-limit requests, collects lines."""

    def __init__(
        self,
        context: SpawnContext,
        setup: WorkerSetup,
        todo: list[tuple[str, BatchItem]],
        progress: Progress,
        lines: dict[str, BatchLine],
        limiter: RateLimiter | None,
    ) -> None:
        self.context = context
        self.setup = setup
        self.items = dict(todo)
        self.progress = progress
        self.lines = lines
        self.pending = deque(i for i, _ in todo)
        self.workers: list[_Worker] = []
        self.limiters: dict[str, RateLimiter] = {}
        if limiter is not None:
            self.limiters[GLOBAL_LIMITER] = limiter
        self.grants: dict[tuple[int, int], tuple[RateLimiter, object]] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.fatal: str | None = None
        self.finished = asyncio.Event()

    async def run(self, count: int, concurrency: int) -> None:
        """Start ``count`` workers, each with its share of ``concurrency``; wait for the end."""
        loop = asyncio.get_running_loop()
        for number in range(count):
            share = concurrency // count + (1 if number < concurrency % count else 0)
            mine, theirs = self.context.Pipe()
            setup = WorkerSetup(**{**vars(self.setup), "number": number})
            process = self.context.Process(
                target=worker_main, args=(theirs, setup), name=f"debate-batch-{number}"
            )
            process.daemon = True
            channel = Channel(mine, partial(self._message, number), partial(self._gone, number))
            worker = _Worker(number, share, process, channel)
            self.workers.append(worker)
            process.start()
            theirs.close()
            worker.channel.start(loop)
        await self.finished.wait()

    def end(self) -> None:
        """Stop every worker: ask it to stop, wait for it a while, then end it."""
        for worker in self.workers:
            worker.channel.send(("stop",))
            worker.channel.close()
        normal = self.finished.is_set() and self.fatal is None
        for worker in self.workers:
            if normal:
                worker.process.join(STOP_WAIT_S)
            if worker.process.is_alive():
                worker.process.terminate()
                worker.process.join(STOP_WAIT_S)
        for worker in self.workers:
            worker.channel.flush()
            worker.channel.conn.close()
        for task in self.tasks:
            task.cancel()

    def _message(self, number: int, message: Message) -> None:
        worker = self.workers[number]
        kind = message[0]
        if kind == "event":
            self.progress.on_event(message[1])
        elif kind == "acquire":
            task = asyncio.create_task(self._acquire(worker, *message[1:]))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        elif kind == "settle":
            limiter, entry = self.grants.pop((worker.number, message[1]))
            limiter.settle(entry, message[2])  # type: ignore[arg-type]
        elif kind == "line":
            self._line(worker, message[1], message[2])
        elif kind == "log":
            logging.getLogger(message[1]).log(message[2], "%s", message[3])
        elif kind == "ready":
            worker.ready = True
            self._start()
        elif kind == "fatal":
            self.fatal = self.fatal or message[1]
            self.finished.set()

    async def _acquire(
        self, worker: _Worker, ref: int, key: str, rpm: int | None, tpm: int | None, tokens: int
    ) -> None:
        limiter = self.limiters.get(key)
        if limiter is None:
            limiter = self.limiters[key] = RateLimiter(rpm, tpm)
        entry = await limiter.acquire(tokens)
        self.grants[(worker.number, ref)] = (limiter, entry)
        worker.channel.send(("grant", ref))

    def _start(self) -> None:
        """Once every living worker has checked the items, hand out the first ones."""
        living = [w for w in self.workers if w.alive]
        if living and all(w.ready for w in living):
            for worker in living:
                self._dispatch(worker)

    def _dispatch(self, worker: _Worker) -> None:
        while worker.alive and worker.ready and self.pending and len(worker.running) < worker.share:
            item_id = self.pending.popleft()
            worker.running.add(item_id)
            self.progress.running += 1
            worker.channel.send(("run", item_id, self.items[item_id]))

    def _line(self, worker: _Worker, item_id: str, line: BatchLine) -> None:
        worker.running.discard(item_id)
        self._record(line)
        self._dispatch(worker)

    def _record(self, line: BatchLine) -> None:
        self.lines[line.id] = line
        self.progress.running -= 1
        if line.status == "ok":
            self.progress.done += 1
        else:
            self.progress.failed += 1
        self.progress.on_event(ItemFinished(line.id, line.status, line.outcome))
        self.progress.show()
        if not self.pending and not any(w.running for w in self.workers):
            self.finished.set()

    def _gone(self, number: int) -> None:
        """A worker's pipe closed before it was told to stop: it died. Record what it held."""
        worker = self.workers[number]
        if self.finished.is_set():
            return
        worker.alive = False
        worker.process.join(1.0)
        code = worker.process.exitcode
        how = f"exit code {code}" if code is None or code >= 0 else f"signal {-code}"
        if worker.running:
            logger.warning(
                "batch worker %d stopped (%s) with %d items running; they are recorded as "
                "failed, and a re-run of the batch runs them again",
                worker.number,
                how,
                len(worker.running),
            )
        for item_id in sorted(worker.running):  # counted as running when handed out
            self._record(
                _stopped(item_id, f"worker {worker.number} stopped ({how}) while running it")
            )
        worker.running.clear()
        if not any(w.alive for w in self.workers):
            while self.pending:
                self.progress.running += 1  # never handed out; _record counts it out
                self._record(_stopped(self.pending.popleft(), "not run: every worker stopped"))
        else:
            self._start()
        if not self.pending and not any(w.running for w in self.workers):
            self.finished.set()


def _stopped(item_id: str, why: str) -> BatchLine:
    """The failed line of an item its worker did not finish."""
    error = f"WorkerStopped: {why}; run the batch again to run it"
    return BatchLine(id=item_id, status="failed", error=error)
