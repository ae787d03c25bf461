"""A worker process of ``debate batch --workers N``: runs the items the parent hands it.

The worker builds its own model pool (its own HTTP clients, or its own embedded model),
opens the shared response cache and run store by path, and checks every item it may be
given before it says it is ready, so bad input stops the batch before any call, as in one
process. It then runs each item the parent sends exactly as one process would
(:func:`debate.batch._run_item`, :func:`debate.batch._kept`: result.json, reports, store)
and sends back the item's line; calls' events and log records go to the parent, which
alone prints. Rate limits are asked of the parent (:class:`RemoteLimiter`); the budget is a
ledger in shared memory (:class:`~debate.runtime._budget.SharedLedger`).

Ctrl-C reaches every process of the terminal's group: the worker ignores it and leaves
the decision to the parent, which ends the workers itself. A worker whose parent is gone
(its pipe closed) stops at once.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from debate.batch import BatchItem, BatchLine, Progress, _kept, _prepare, _run_item
from debate.batch._channel import Channel, Message
from debate.exceptions import ConfigurationError
from debate.records._config import RunConfig
from debate.runtime._budget import Budget
from debate.runtime._events import Event, StepFinished
from debate.runtime._limiter import RateLimiter, RemoteLimiter
from debate.runtime._pool import ModelPool
from debate.runtime._pricing import PriceTable
from debate.storage._cache import ResponseCache
from debate.storage._runs import RunStore

GLOBAL_LIMITER = ""
"""The key of the batch's ``--rpm``/``--tpm`` limiter (endpoints' limiters have their own)."""


@dataclass
class WorkerSetup:
    """What a worker is given when it is spawned (pickled once, shared memory included)."""

    number: int
    config: RunConfig
    """The batch's config (its pool's default models)."""
    checks: list[tuple[str, BatchItem]]
    """One item of each distinct config (and kind) among those not finished: checking them
    checks every item the parent may send, without sending every item to every worker."""
    plans: dict[str, tuple[Path, RunConfig]]
    """Each unfinished item's folder and config, worked out once by the parent (items
    without overrides share one config, which is pickled once)."""
    seed: int
    model_path: str | None
    cache: Path | None
    store: Path | None
    budget: Budget | None
    prices: PriceTable | None
    limits: tuple[int | None, int | None] | None
    """``--rpm`` and ``--tpm`` (None without either)."""
    history: Mapping[str, float] | None
    forward_all: bool
    """Send every event (``--progress jsonl``), not only finished calls (the counts)."""
    log_level: int


def worker_main(conn: Connection, setup: WorkerSetup) -> None:
    """The worker process's entry point (a top-level function, so ``spawn`` can import it)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    asyncio.run(_Worker(conn, setup).serve())


class _ToParent(logging.Handler):
    """Sends log records to the parent, which logs them with its own handler and format."""

    def __init__(self, channel: Channel) -> None:
        super().__init__()
        self.channel = channel

    def emit(self, record: logging.LogRecord) -> None:
        self.channel.send(("log", record.name, record.levelno, record.getMessage()))


class _Worker:
    def __init__(self, conn: Connection, setup: WorkerSetup) -> None:
        self.setup = setup
        self.channel = Channel(conn, self._message, self._parent_gone)
        self.grants: dict[int, asyncio.Future[int]] = {}
        self.refs = itertools.count(1)
        self.tasks: set[asyncio.Task[None]] = set()

    async def serve(self) -> None:
        """Check every item, say ready, run what the parent sends until it says stop."""
        s = self.setup
        self.stopped = asyncio.Event()
        self.channel.start(asyncio.get_running_loop())
        root = logging.getLogger()
        root.handlers[:] = [_ToParent(self.channel)]
        root.setLevel(s.log_level)
        self.pool = ModelPool(s.config, seed=s.seed, model_path=s.model_path)
        self.pool.limiter_factory = self._remote
        self.limiter = None if s.limits is None else self._remote(GLOBAL_LIMITER, *s.limits)
        self.cache = None if s.cache is None else ResponseCache(s.cache)
        self.store = None if s.store is None else RunStore(s.store)
        self.progress = Progress(len(s.plans), listener=self._event)
        try:
            for item_id, item in s.checks:
                _prepare(self.pool, item, item_id, s.plans[item_id][1], s.budget, s.prices)
            self.channel.send(("ready",))
            await self.stopped.wait()
        except ConfigurationError as exc:
            self.channel.send(("fatal", str(exc)))
        finally:
            for task in self.tasks:
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)
            await self.pool.aclose()
            self.channel.close()
            self.channel.flush()

    def _remote(self, key: str, rpm: int | None, tpm: int | None) -> RateLimiter:
        async def ask(tokens: int) -> int:
            ref = next(self.refs)
            grant: asyncio.Future[int] = asyncio.get_running_loop().create_future()
            self.grants[ref] = grant
            self.channel.send(("acquire", ref, key, rpm, tpm, tokens))
            return await grant

        def tell(ref: int, tokens: int) -> None:
            self.channel.send(("settle", ref, tokens))

        return RemoteLimiter(rpm, tpm, ask, tell)

    def _message(self, message: Message) -> None:
        kind = message[0]
        if kind == "run":
            task = asyncio.create_task(self._run(message[1], message[2]))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        elif kind == "grant":
            grant = self.grants.pop(message[1], None)
            if grant is not None and not grant.done():
                grant.set_result(message[1])
        elif kind == "stop":
            self.stopped.set()

    def _parent_gone(self) -> None:
        self.stopped.set()

    def _event(self, event: Event) -> None:
        if self.setup.forward_all or isinstance(event, StepFinished):
            self.channel.send(("event", event))

    async def _run(self, item_id: str, item: BatchItem) -> None:
        s = self.setup
        folder, config = s.plans[item_id]
        money: dict[str, Any] = {"prices": s.prices, "budget": s.budget}
        run = _run_item(
            item,
            config,
            self.pool,
            self.limiter,
            self.cache,
            s.seed,
            self.progress,
            s.history,
            money,
        )
        try:
            line = await _kept(run, item_id, folder, self.store)
        except ConfigurationError as exc:  # stops the batch, as in one process
            self.channel.send(("fatal", str(exc)))
            return
        except Exception as exc:  # a line for the parent, never an item it waits for in vain
            error = f"{type(exc).__name__}: {exc}"
            line = BatchLine(id=item_id, status="failed", error=error)
        self.channel.send(("line", item_id, line))
