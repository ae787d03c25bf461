"""``debate batch --engine ray``: one batch over the worker processes of a Ray cluster.

One Python process spends about a millisecond and a half of CPU per model call, so it
tops out at several hundred calls per second; a model server can answer more, and a
cluster of machines more again. Ray runs the items (a local Ray is started when no
``--ray-address`` is given); this process, the driver, does what must be one for the batch:

- **workers**: one Ray actor per worker (:class:`BatchWorker`), each with its own model
  pool (its own HTTP clients, or its own embedded model) and its share of
  ``--concurrency`` (items in flight in all). The driver hands an item to a worker with a
  free slot, so a slow worker gets fewer items.
- **one rate limit**: ``--rpm``/``--tpm`` and each endpoint's limits are windows kept by
  one actor; a worker's call asks it for a grant (one round trip per call) and tells it the
  real token count after.
- **one cost ledger**: ``--max-cost``/``--max-tokens`` are checked and held in one actor; a
  hold is one awaited round trip, a settle a message. The whole cluster can no more pass a
  cap than the items of one process can (both actors: :mod:`debate.batch._ray_limits`).
- **results**: a worker returns the item's :class:`~debate.records._result.DebateResult`
  (with the item's events and log records); the driver writes ``OUT/<id>/result.json``,
  its reports and the run store's row, then ``results.jsonl``, ``summary.jsonl`` and
  ``summary.html`` as one process writes them. Workers write nothing under ``--out``, so
  the cluster's machines need no shared folder. A re-run skips the items whose
  result.json is there, as in one process.

A worker that dies (killed, out of memory, its machine gone) is restarted by Ray, which
runs its items in flight again (``max_task_retries``): nothing was written for them, so
each item is written and recorded once. The calls they had finished replay from the
response cache when the workers share one (one machine). An item that kills its worker
:data:`ITEM_RETRIES` + 1 times is recorded as failed and the others go on.

Ray is an optional extra (``pip install 'debate[ray]'``): this module is imported only
when a batch asks for it, never by ``import debate`` or a one-process batch.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from debate._shares import share
from debate.batch import (
    BatchItem,
    BatchLine,
    Progress,
    _prepare,
    _run_item,
    check_concurrency,
    check_workers,
    item_plans,
    keep,
    one_of_each,
    unfinished,
    write_batch_files,
)
from debate.batch._ray_cluster import cluster_cpus
from debate.batch._ray_limits import GLOBAL_LIMITER, LedgerActor, LimitsActor, RayLedger
from debate.exceptions import ConfigurationError, DebateError
from debate.records import DebateResult, NotUnicodeError, RunConfig
from debate.runtime import (
    Budget,
    Event,
    ItemFinished,
    ModelPool,
    PriceTable,
    RateLimiter,
    RemoteLimiter,
    Run,
    StepFinished,
)
from debate.storage import ResponseCache, RunStore

try:
    import ray
except ImportError:  # pragma: no cover - the CLI says how to install it before it gets here
    ray = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

ITEM_RETRIES = 2
"""How many times Ray runs an item again after its worker died running it."""


@dataclass
class WorkerSetup:
    """What every worker is given when it starts (sent once per worker)."""

    config: RunConfig
    """The batch's config (its pool's default models)."""
    checks: list[tuple[str, BatchItem, RunConfig]]
    """One item of each distinct config (and kind) among those not finished, with its
    config: checking them checks every item the driver may send. Small (each item's own
    config goes with the item), so Ray sends it inline and can always restart a worker."""
    seed: int
    model_path: str | None
    cache: Path | None
    """The response cache's file, opened by each worker (one file on one machine)."""
    prices: PriceTable | None
    caps: tuple[float | None, int | None] | None
    """``--max-cost`` and ``--max-tokens`` (None without either)."""
    limits: tuple[int | None, int | None] | None
    """``--rpm`` and ``--tpm`` (None without either)."""
    history: Mapping[str, float] | None
    forward_all: bool
    """Return every event (``--progress jsonl``), not only finished calls (the counts)."""
    log_level: int


@dataclass
class Outcome:
    """What a worker returns for one item: its result, or why it has none."""

    result: DebateResult | None = None
    failed: BatchLine | None = None
    fatal: str | None = None
    """Bad input found while it ran: stops the batch, as in one process."""
    events: list[Event] = field(default_factory=list)
    logs: list[tuple[str, int, str]] = field(default_factory=list)


class _Collect(logging.Handler):
    """Keeps a worker's log records until the next item returns them to the driver."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[tuple[str, int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((record.name, record.levelno, record.getMessage()))

    def drain(self) -> list[tuple[str, int, str]]:
        records, self.records = self.records, []
        return records


class BatchWorker:
    """A Ray actor that runs the items the driver sends it with its own model pool."""

    def __init__(self, setup: WorkerSetup, limits: str, ledger: str) -> None:
        """Build the pool; find the batch's actors named ``limits`` and ``ledger``.

        Names, not handles: handles as arguments would put the arguments in Ray's object
        store, from where a restarted worker may not get them back.
        """
        self.setup = setup
        self.logs = _Collect()
        root = logging.getLogger()
        root.handlers[:] = [self.logs]
        root.setLevel(setup.log_level)
        self.limits = ray.get_actor(limits)
        self.pool = ModelPool(setup.config, seed=setup.seed, model_path=setup.model_path)
        self.pool.limiter_factory = self._window
        limits_of = setup.limits
        self.limiter = None if limits_of is None else self._window(GLOBAL_LIMITER, *limits_of)
        self.cache = None if setup.cache is None else ResponseCache(setup.cache)
        budget = None
        if setup.caps is not None:
            budget = Budget(*setup.caps, ledger=RayLedger(ray.get_actor(ledger)))
        self.shared = Run(
            pool=self.pool,
            cache=self.cache,
            limiter=self.limiter,
            prices=setup.prices,
            budget=budget,
            history=setup.history,
        )
        """The worker's machinery: its own pool and cache, the cluster's limits and ledger."""

    def _window(self, key: str, rpm: int | None, tpm: int | None) -> RateLimiter:
        limits = self.limits

        async def ask(tokens: int) -> int:
            return int(await limits.acquire.remote(key, rpm, tpm, tokens))

        def tell(ref: int, tokens: int) -> None:
            limits.settle.remote(ref, tokens)

        return RemoteLimiter(rpm, tpm, ask, tell)

    async def check(self) -> str | None:
        """Build every model the items name; the bad input's one line, or None."""
        s = self.setup
        try:
            for item_id, item, config in s.checks:
                _prepare(item, item_id, config, self.shared)
        except ConfigurationError as exc:
            return str(exc)
        return None

    async def run(self, item_id: str, item: BatchItem, config: RunConfig) -> Outcome:
        """Run one item as one process would; never raises for the item's own failure."""
        s = self.setup
        events: list[Event] = []

        def listen(event: Event) -> None:
            if s.forward_all or isinstance(event, StepFinished):
                events.append(event)

        progress = Progress(1, listener=listen)
        outcome = Outcome(events=events)
        try:
            each = self.shared.with_(on_event=progress.on_event)
            outcome.result = await _run_item(item, config, each, s.seed)
        except NotUnicodeError as exc:
            outcome.failed = BatchLine(id=item_id, status="failed", error=f"bad input: {exc}")
        except ConfigurationError as exc:
            outcome.fatal = str(exc)
        except (DebateError, ValidationError, OSError) as exc:
            error = f"{type(exc).__name__}: {exc}"
            outcome.failed = BatchLine(id=item_id, status="failed", error=error)
        outcome.logs = self.logs.drain()
        return outcome

    async def close(self) -> None:
        """Close the pool's clients and the cache."""
        await self.pool.aclose()
        if self.cache is not None:
            self.cache.close()


async def run_batch_ray(
    items: list[tuple[str, BatchItem]],
    *,
    config: RunConfig,
    out_dir: Path,
    workers: int | None = None,
    concurrency: int = 8,
    run: Run | None = None,
    cache: Path | None = None,
    seed: int = 0,
    progress: Progress | None = None,
    store: RunStore | None = None,
) -> list[BatchLine]:
    """Run every item on the connected Ray cluster; return one line per item in input order.

    As :func:`debate.batch.run_batch`, except that the workers build their own pools and
    open the cache from its path (``cache``), and ``run``'s budget and limiter give only
    their caps and limits: the cluster shares one ledger and one window of each.
    ``workers`` (None: one per CPU of the cluster) actors are started, each with its share
    of ``concurrency``. The caller connects to Ray first (:func:`start_ray`).

    Raises:
        ConfigurationError: ``run`` holds a pool or an open cache (they cannot travel to
            the workers).
    """
    run = _travelling(run or Run())
    limiter, budget = run.limiter, run.budget
    check_concurrency(concurrency)
    check_workers(workers, concurrency)
    plans = item_plans(items, config, out_dir)
    progress = progress or Progress(len(items))
    todo, lines = unfinished(items, plans, progress)
    driver = _Driver(plans, progress, lines, store)
    try:
        if todo:
            count = min(workers or cluster_cpus(), len(todo), concurrency)
            setup = WorkerSetup(
                config=config,
                checks=one_of_each(todo, plans),
                seed=seed,
                model_path=run.model_path,
                cache=cache,
                prices=run.prices,
                caps=None if budget is None else (budget.max_cost_usd, budget.max_tokens),
                limits=None if limiter is None else (limiter.rpm, limiter.tpm),
                history=run.history,
                forward_all=progress.listener is not None,
                log_level=logging.getLogger().getEffectiveLevel(),
            )
            await driver.run(setup, todo, count, concurrency)
    finally:
        await driver.end()
        progress.show(force=True)
        ordered = write_batch_files([i for i, _ in items], lines, out_dir)
    if driver.fatal is not None:
        raise ConfigurationError(driver.fatal)
    return ordered


def _travelling(run: Run) -> Run:
    """``run``, refused if it holds what cannot travel to the workers (a pool, an open cache)."""
    if run.pool is not None or run.cache is not None:
        raise ConfigurationError(
            "run: a Ray batch's workers build their own pools and open the cache by path; "
            "give Run() without pool and cache, and cache= as a path"
        )
    return run


class _Driver:
    """Starts the actors, hands items to free slots, keeps each item's result once."""

    def __init__(
        self,
        plans: Mapping[str, tuple[Path, RunConfig]],
        progress: Progress,
        lines: dict[str, BatchLine],
        store: RunStore | None,
    ) -> None:
        self.plans = plans
        self.progress = progress
        self.lines = lines
        self.store = store
        self.actors: list[Any] = []
        self.helpers: list[Any] = []
        self.fatal: str | None = None

    async def run(
        self, setup: WorkerSetup, todo: list[tuple[str, BatchItem]], count: int, concurrency: int
    ) -> None:
        """Start ``count`` workers, check the items in each, run every item."""
        names = f"debate-batch-{uuid.uuid4().hex}-limits", f"debate-batch-{uuid.uuid4().hex}-ledger"
        limits = (
            ray.remote(LimitsActor)
            .options(name=names[0], num_cpus=0, max_concurrency=10_000)
            .remote()
        )
        ledger = ray.remote(LedgerActor).options(name=names[1], num_cpus=0).remote()
        self.helpers = [limits, ledger]
        slots: asyncio.Queue[int] = asyncio.Queue()
        for number in range(count):
            part = share(concurrency, count, number)
            actor = (
                ray.remote(BatchWorker)
                .options(
                    num_cpus=1,
                    max_concurrency=part,
                    max_restarts=-1,
                    max_task_retries=ITEM_RETRIES,
                )
                .remote(setup, *names)
            )
            self.actors.append(actor)
            for _ in range(part):
                slots.put_nowait(number)
        try:
            refused = await asyncio.gather(*(a.check.remote() for a in self.actors))
        except ray.exceptions.RayError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ConfigurationError(
                f"--engine ray: a batch worker could not start ({first}); every machine of "
                "the cluster needs debate installed (the same version)"
            ) from exc
        if any(refused):
            self.fatal = next(r for r in refused if r)
            return
        tasks = [asyncio.create_task(self._one(slots, i, item)) for i, item in todo]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()

    async def _one(self, slots: asyncio.Queue[int], item_id: str, item: BatchItem) -> None:
        number = await slots.get()
        self.progress.running += 1
        try:
            config = self.plans[item_id][1]
            outcome: Outcome = await self.actors[number].run.remote(item_id, item, config)
        except ray.exceptions.RayTaskError as exc:  # the item raised what no item should
            cause = exc.cause if exc.cause is not None else exc
            message = (str(cause).strip().splitlines() or [""])[0]
            error = f"{type(cause).__name__}: {message}"
            outcome = Outcome(failed=BatchLine(id=item_id, status="failed", error=error))
        except ray.exceptions.RayError as exc:  # its worker died more than Ray retries
            why = f"its worker stopped {ITEM_RETRIES + 1} times while running it"
            error = f"WorkerStopped: {why} ({type(exc).__name__}); run the batch again to run it"
            outcome = Outcome(failed=BatchLine(id=item_id, status="failed", error=error))
        finally:
            slots.put_nowait(number)
            self.progress.running -= 1
        for name, level, message in outcome.logs:
            logging.getLogger(name).log(level, "%s", message)
        for event in outcome.events:
            self.progress.on_event(event)
        if outcome.fatal is not None:
            self.fatal = self.fatal or outcome.fatal
            raise ConfigurationError(outcome.fatal)  # ends the gather: the batch stops
        self._record(item_id, outcome)

    def _record(self, item_id: str, outcome: Outcome) -> None:
        line = outcome.failed
        if outcome.result is not None:
            try:
                line = keep(outcome.result, item_id, self.plans[item_id][0], self.store)
            except (DebateError, ValidationError, OSError) as exc:
                error = f"{type(exc).__name__}: {exc}"
                line = BatchLine(id=item_id, status="failed", error=error)
        assert line is not None
        self.lines[item_id] = line
        if line.status == "ok":
            self.progress.done += 1
        else:
            self.progress.failed += 1
        self.progress.on_event(ItemFinished(item_id, line.status, line.outcome))
        self.progress.show()

    async def end(self) -> None:
        """Close every worker's clients, then end the actors (the driver's, not Ray's)."""
        if self.actors:
            closing = [a.close.remote() for a in self.actors]
            try:
                await asyncio.wait_for(asyncio.gather(*closing), 10.0)
            except (asyncio.TimeoutError, ray.exceptions.RayError):
                logger.debug("a batch worker did not close in time; it is ended")
        for actor in [*self.actors, *self.helpers]:
            ray.kill(actor, no_restart=True)
        self.actors, self.helpers = [], []
