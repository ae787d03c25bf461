"""``debate batch --engine processes``: one batch over this machine's cores, without Ray.

One Python process spends about a millisecond and a half of CPU per model call, and holds
the interpreter lock while it does: with forty debates in flight their prompts, replies,
conclusions and reports queue on one core while the others idle. This engine forks the
command into ``workers`` processes once everything is imported and every item is
checked, so no process pays the imports again:

- **shares**: the items still to run are dealt out in file order, every ``workers``-th
  to the same process, each process with its share of ``--concurrency``. Each builds its
  own model clients, opens the response cache by its path (one SQLite file, which several
  processes share as Ray's workers do), runs its items with the batch's seed and writes
  their folders itself, as one process would: a batch gives the same results whichever
  engine runs it.
- **the driver** is the first process: it runs its own share, takes the others' progress
  and lines through a pipe each, records every finished result in the run store (its only
  writer), and writes ``results.jsonl`` and the summary once all have ended. A re-run
  skips finished items, as in one process.
- **stopping**: Ctrl-C reaches the driver only (the others ignore it); the driver stops
  them (SIGTERM), and each ends as one process ends when cancelled, its finished items
  kept. A process that dies (killed, out of memory) leaves its unfinished items as failed
  lines that say to run the batch again. Bad input found while an item runs stops the
  whole batch, as in one process.

What one process keeps once for every item would be kept once per process here, so it is
refused rather than multiplied: ``--rpm``/``--tpm``, an endpoint's ``rpm``/``tpm``, and
``--max-cost``/``--max-tokens`` (``--engine ray`` keeps each in one actor). POSIX only
(``os.fork``), and only from a process with no other thread: a lock another thread held at
the fork would stay held in the copy for ever.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection, Pipe
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from debate._preload import HTTP_CLIENT, import_after_calls
from debate._shares import share
from debate.batch import (
    BatchItem,
    BatchLine,
    Progress,
    _finished,
    _prepare,
    check_concurrency,
    check_workers,
    item_plans,
    one_of_each,
    run_items,
    unfinished,
    write_batch_files,
)
from debate.exceptions import ConfigurationError, DebateError
from debate.records import RunConfig
from debate.runtime import Event, EventHandler, ItemFinished, ModelPool, Run, StepFinished
from debate.storage import ResponseCache, RunStore

logger = logging.getLogger(__name__)

Plans = Mapping[str, tuple[Path, RunConfig]]
Events = Literal["all", "calls", "none"]


def cpus() -> int:
    """The cores this process may run on (its affinity where the system says)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def run_batch_processes(
    items: list[tuple[str, BatchItem]],
    *,
    config: RunConfig,
    out_dir: Path,
    workers: int | None = None,
    concurrency: int = 8,
    run: Run | None = None,
    seed: int = 0,
    progress: Progress | None = None,
    store: RunStore | None = None,
) -> list[BatchLine]:
    """Run every item over ``workers`` processes (None: one per core); lines in input order.

    As :func:`debate.batch.run_batch`, but called outside any event loop (it forks, then
    runs one per process). ``run`` gives the cache (each process opens its file), the
    prices, the track records and the embedded model's path; each process builds its own
    pool.

    Raises:
        ConfigurationError: ``run`` holds a pool, a rate limit or a cost cap, an item's
            endpoint has ``rpm``/``tpm``, or this process cannot fork (no ``os.fork``,
            another thread running); bad input, as in one process.
    """
    _outside_loops()
    run = run or Run()
    check_concurrency(concurrency)
    check_workers(workers, concurrency)
    plans = item_plans(items, config, out_dir)
    _check_shared(run, plans)
    progress = progress or Progress(len(items))
    todo, lines = unfinished(items, plans, progress)
    pool = ModelPool(config, seed=seed, model_path=run.model_path)
    mine = _prepared(todo, plans, run.with_(pool=pool, on_event=progress.on_event))
    count = max(1, min(workers or cpus(), len(todo), concurrency))
    if count > 1:
        _check_fork()
        # what every process would import on its own (the decision, the reports, the HTTP
        # client's module and its TLS contexts): imported once, before the copies are made
        import_after_calls(HTTP_CLIENT)
    driver = _Driver(plans, progress, lines, store)
    stopping = True
    try:
        for k in range(1, count):
            driver.fork(todo[k::count], share(concurrency, count, k), config, run, seed)
        asyncio.run(driver.drive(todo[::count], share(concurrency, count, 0), mine, seed))
        stopping = driver.fatal is not None
    finally:
        driver.reap(stopping)
        progress.show(force=True)
        ordered = write_batch_files([i for i, _ in items], lines, out_dir)
    if driver.fatal is not None:
        raise ConfigurationError(driver.fatal)
    return ordered


def _prepared(todo: list[tuple[str, BatchItem]], plans: Plans, run: Run) -> Run:
    """``run`` with every item's models built in its pool, before any fork (bad input first).

    Raises:
        ConfigurationError: an item names the embedded model; bad input, as in one process.
    """
    assert run.pool is not None
    kinds = one_of_each(todo, plans)  # items share their config: one check per config
    if any(run.pool.embeds(cfg, debaters=item.topic is not None) for _, item, cfg in kinds):
        raise ConfigurationError(
            "--engine processes: the embedded model runs in the process that calls it and "
            "already uses every core, so more processes would only load it again; use "
            "--engine local, or serve it and give --base-url"
        )
    for item_id, item in todo:
        _prepare(item, item_id, plans[item_id][1], run)
    return run


def _check_shared(run: Run, plans: Plans) -> None:
    """Refuse what one process keeps for all its items: it would be kept once per process."""
    if run.pool is not None:
        raise ConfigurationError(
            "run: each process of a processes batch builds its own pool; give Run() without pool"
        )
    use = "use --engine local (one process) or --engine ray (one for every worker)"
    if run.limiter is not None or run.budget is not None:
        raise ConfigurationError(
            "--engine processes: --rpm/--tpm and --max-cost/--max-tokens would be kept by "
            f"each process for its own items, each process passing them in full; {use}"
        )
    for cfg in {id(cfg): cfg for _, cfg in plans.values()}.values():  # once per config
        for name, endpoint in cfg.endpoints.items():
            if endpoint.rpm is not None or endpoint.tpm is not None:
                raise ConfigurationError(
                    f"--engine processes: endpoint {name} has rpm/tpm, which each process "
                    f"would keep in full for its own calls; {use}"
                )


def _outside_loops() -> None:
    """Refuse a call from inside an event loop: each process runs its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise ConfigurationError(
        "run_batch_processes forks and runs an event loop in each process, so it cannot run "
        "inside one (a coroutine, a notebook cell); use 'await run_batch(...)' there"
    )


def _check_fork() -> None:
    """Refuse to fork where the copy would not work.

    macOS's system libraries (numpy's Accelerate among them) are not safe to use in a
    forked copy, which is why CPython's own multiprocessing starts processes afresh there.
    """
    if not hasattr(os, "fork") or sys.platform == "darwin":
        raise ConfigurationError(
            f"--engine processes: forking is not safe or not possible on {sys.platform}; "
            "use --engine local or --engine ray"
        )
    if threading.active_count() > 1:
        raise ConfigurationError(
            f"--engine processes: this process runs {threading.active_count()} threads and a "
            "fork copies only the calling one (a lock another holds would stay held); run "
            "it from a process without other threads (the debate command is one), or use "
            "--engine local"
        )


@dataclass
class _Child:
    pid: int
    conn: Connection
    share: list[tuple[str, BatchItem]]
    open: bool = True
    """Its pipe not yet at its end."""
    stopped: bool = False
    """Told to stop (once: a second cancellation would cut short its last writes)."""


class _Driver:
    """Forks the other processes, runs its own share, keeps every process's lines."""

    def __init__(
        self, plans: Plans, progress: Progress, lines: dict[str, BatchLine], store: RunStore | None
    ) -> None:
        self.plans = plans
        self.progress = progress
        self.lines = lines
        self.store = store
        self.children: list[_Child] = []
        self.fatal: str | None = None
        self.own: asyncio.Future[None] | None = None

    def fork(
        self, share: list[tuple[str, BatchItem]], gate: int, config: RunConfig, run: Run, seed: int
    ) -> None:
        """Start a process that runs ``share`` ``gate`` at a time and reports to this one."""
        reader, writer = Pipe(duplex=False)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the copy: it never returns
            try:
                reader.close()
                for other in self.children:
                    other.conn.close()
                shown = self.progress
                events: Events = "all" if shown.listener else "calls" if shown.stream else "none"
                _worker(writer, _Work(share, gate, self.plans, config, run, seed, events))
            finally:
                os._exit(1)  # only if the copy failed before its work began
        writer.close()
        self.children.append(_Child(pid, reader, share))

    async def drive(
        self, share: list[tuple[str, BatchItem]], gate: int, run: Run, seed: int
    ) -> None:
        """Run this process's share while taking the others' reports, until all end."""
        loop = asyncio.get_running_loop()
        ends = [self._listen(loop, child) for child in self.children]
        work = run_items(share, self.plans, self.lines, run, gate, seed, self.progress, self.store)
        self.own = asyncio.ensure_future(work)
        try:
            await asyncio.gather(self.own, *ends)
        except asyncio.CancelledError:
            if self.fatal is None:  # Ctrl-C, not a stop for another process's bad input
                raise
        finally:
            assert run.pool is not None
            await run.pool.aclose()

    def _listen(self, loop: asyncio.AbstractEventLoop, child: _Child) -> asyncio.Future[None]:
        ended: asyncio.Future[None] = loop.create_future()
        fd = child.conn.fileno()

        def readable() -> None:
            try:
                while child.conn.poll():
                    self._take(child.conn.recv())
            except (EOFError, OSError):
                loop.remove_reader(fd)
                child.open = False
                if not ended.done():
                    ended.set_result(None)

        loop.add_reader(fd, readable)
        return ended

    def _take(self, message: tuple[Any, ...]) -> None:
        """One report of another process: an event, its running count, a line, bad input."""
        kind = message[0]
        if kind == "event":
            self.progress.on_event(message[1])
        elif kind == "running":
            self.progress.running += message[1]
        elif kind == "line":
            self._record(message[1], message[2])
        elif kind == "fatal" and self.fatal is None:
            self.fatal = message[1]
            self._stop()

    def _record(self, item_id: str, line: BatchLine) -> None:
        """Keep a line another process wrote the folder of; record its result in the store."""
        if line.status == "ok" and self.store is not None:
            try:
                result = _finished(self.plans[item_id][0] / "result.json")
                if result is None:
                    raise OSError("its result.json cannot be read back")
                self.store.record(result)
            except (DebateError, ValidationError, OSError) as exc:
                line = BatchLine(id=item_id, status="failed", error=f"{type(exc).__name__}: {exc}")
        self.lines[item_id] = line
        if line.status == "ok":
            self.progress.done += 1
        else:
            self.progress.failed += 1
        self.progress.on_event(ItemFinished(item_id, line.status, line.outcome))
        self.progress.show()

    def _stop(self) -> None:
        """Stop every process: this one's share cancelled, the others told (SIGTERM)."""
        if self.own is not None and not self.own.done():
            self.own.cancel()
        for child in self.children:
            if child.open and not child.stopped:
                child.stopped = True
                _signal(child.pid, signal.SIGTERM)

    def reap(self, stopping: bool) -> None:
        """Stop the others if ``stopping``, take what they still report, wait for them.

        An item whose result.json a process wrote before it ended without reporting it
        (killed between the two) is finished: its line is read from the file. The other
        items of a process that ended before them (killed, say) get failed lines, unless
        the batch was stopping: then they are left out, as in one process.
        """
        if stopping:
            self._stop()
        for child in self.children:
            try:
                while child.open:
                    self._take(child.conn.recv())
            except (EOFError, OSError):
                child.open = False
            child.conn.close()
            _, status = os.waitpid(child.pid, 0)
            # a copy's bad input can arrive while the others are reaped: they were stopped
            self._settle(child, status, lost=not stopping and self.fatal is None)

    def _settle(self, child: _Child, status: int, lost: bool) -> None:
        how = (
            f"signal {os.WTERMSIG(status)}"
            if os.WIFSIGNALED(status)
            else f"exit status {os.waitstatus_to_exitcode(status)}"
        )
        for item_id, _ in child.share:
            if item_id in self.lines:
                continue
            result = _finished(self.plans[item_id][0] / "result.json")
            if result is not None:
                self._record(item_id, BatchLine.of(item_id, result))
            elif lost:
                error = (
                    f"WorkerStopped: its process ended ({how}) before the item did; run the "
                    "batch again to run it"
                )
                self._record(item_id, BatchLine(id=item_id, status="failed", error=error))


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


@dataclass(frozen=True)
class _Work:
    """What a forked process runs."""

    share: list[tuple[str, BatchItem]]
    gate: int
    plans: Plans
    config: RunConfig
    run: Run
    seed: int
    events: Events
    """The events to report: every one (``--progress jsonl``), the finished calls (the
    progress line's counts), or none (``--quiet``)."""


def _worker(conn: Connection, work: _Work) -> None:
    """A forked process's life: its share run, its reports sent; it exits, never returns.

    Ctrl-C is the driver's to handle (it stops this process with SIGTERM), so it is
    ignored here, and ``os._exit`` leaves the driver's exit handlers (its open caches and
    stores) to the driver.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    code = 1
    try:
        asyncio.run(_work(conn, work))
        code = 0
    except asyncio.CancelledError:
        code = 128 + signal.SIGTERM
    except ConfigurationError as exc:
        conn.send(("fatal", str(exc)))
    except BaseException:  # noqa: BLE001 - reported, then the process ends
        logger.exception("a batch process failed; its unfinished items are failed lines")
    finally:
        conn.close()
        os._exit(code)


async def _work(conn: Connection, work: _Work) -> None:
    """Run the share with this process's own pool and cache; every line sent once."""
    lock = threading.Lock()  # calls may end in worker threads: one message at a time

    def send(message: tuple[Any, ...]) -> None:
        with lock:
            conn.send(message)

    lines: dict[str, BatchLine] = {}
    sent: set[str] = set()

    def listen(event: Event) -> None:
        if isinstance(event, ItemFinished):
            sent.add(event.id)
            send(("line", event.id, lines[event.id]))
        elif work.events == "all" or (work.events == "calls" and isinstance(event, StepFinished)):
            send(("event", event))

    progress = _Relayed(send, len(work.share), listen)
    cache = None if work.run.cache is None else ResponseCache(work.run.cache.path)
    pool = ModelPool(work.config, seed=work.seed, model_path=work.run.model_path)
    run = work.run.with_(pool=pool, cache=cache, on_event=progress.on_event)
    main = asyncio.current_task()
    assert main is not None
    loop = asyncio.get_running_loop()  # SIGTERM (the driver stopping this one) cancels it
    loop.add_signal_handler(signal.SIGTERM, lambda: None if main.cancelling() else main.cancel())
    try:
        for item_id, item in work.share:
            _prepare(item, item_id, work.plans[item_id][1], run)
        await run_items(work.share, work.plans, lines, run, work.gate, work.seed, progress, None)
    finally:
        # stopping now: a later SIGTERM (the driver stopping the others) is ignored, not
        # sent to a loop about to close its wake-up pipe (which would print a traceback)
        loop.remove_signal_handler(signal.SIGTERM)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for item_id in lines.keys() - sent:  # kept while being cancelled: no event said so
            send(("line", item_id, lines[item_id]))
        await pool.aclose()
        if cache is not None:
            cache.close()


class _Relayed(Progress):
    """A forked process's progress: shown by the driver, so its running count goes there."""

    def __init__(
        self, send: Callable[[tuple[Any, ...]], None], total: int, listener: EventHandler
    ) -> None:
        self._send = send
        self._running = 0
        super().__init__(total, listener=listener)

    @property
    def running(self) -> int:
        return self._running

    @running.setter
    def running(self, value: int) -> None:
        if value != self._running:
            self._send(("running", value - self._running))
        self._running = value
