"""Group commit: writes (and reads) awaited on an event loop, made together in a worker.

The service's runner stores a reply for each of its calls (some 400 a second at 64 jobs):
one worker-thread hop and one write transaction per reply was about a seventh of the runner
process's CPU (``benchmarks/bench_service.py``; the hops, seven statements a write, and the
interpreter lock handed back and forth for each). Here a write waits in a list while
another is being written, and the next transaction takes every write waiting: under load
one hop and one transaction store many replies, and a lone write goes at once, as before.
Each caller still resumes only once its own write is committed. Lookups that cross a
network (PostgreSQL's) are grouped the same way: one query for every key waiting.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

Item = TypeVar("Item")
Out = TypeVar("Out")

Waiter = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]"]


class GroupCommit(Generic[Item, Out]):
    """Calls ``write(items)`` in a worker thread for every item waiting, one batch at a time.

    Args:
        write: Writes (or reads) items in order in one go; returns each item's result in
            their order, or raises if none was done.
        most: Items a write takes at most (the rest wait for the next), so that a
            transaction holds the file's write lock briefly: another process's writer
            (the app's submits) gets in between.
    """

    def __init__(
        self, write: Callable[[Sequence[Item]], Sequence[Out]], most: int = 1_000_000
    ) -> None:
        self._write = write
        self._most = most
        self._waiting: list[tuple[Item, Waiter]] = []
        self._busy = False
        """Whether a worker is writing (it takes whatever waits when it is done)."""
        self._guard = threading.Lock()

    async def put(self, item: Item) -> Out:
        """Write ``item``; return its result once it is committed (raise what it raised)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Out] = loop.create_future()
        with self._guard:
            self._waiting.append((item, (loop, done)))
            start, self._busy = not self._busy, True
        if start:
            try:
                loop.run_in_executor(None, self._drain)
            except RuntimeError:  # the loop's executor is shut down: write here, now
                self._drain()
        return await done

    def _drain(self) -> None:
        """Write batches until none waits (in a worker thread)."""
        while True:
            with self._guard:
                batch, self._waiting = self._waiting[: self._most], self._waiting[self._most :]
                if not batch:
                    self._busy = False
                    return
            try:
                outcomes: list[object] = list(self._write([item for item, _ in batch]))
            except Exception:  # each item alone, so that one's failure is its own
                outcomes = [self._one(item) for item, _ in batch]
            _settle([(waiter, out) for (_, waiter), out in zip(batch, outcomes, strict=True)])

    def _one(self, item: Item) -> object:
        try:
            return self._write([item])[0]
        except Exception as exc:
            return _Failed(exc)


class _Failed:
    """An item's exception, as its outcome."""

    def __init__(self, error: Exception) -> None:
        self.error = error


def _settle(outcomes: Sequence[tuple[Waiter, object]]) -> None:
    """Resume each waiter on its own loop (one hand-over per loop, not per item)."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], object]]] = {}
    for (loop, done), out in outcomes:
        by_loop.setdefault(loop, []).append((done, out))
    for loop, resumed in by_loop.items():
        try:
            loop.call_soon_threadsafe(_resume, resumed)
        except RuntimeError:  # the loop closed: nobody waits there any more
            pass


def _resume(resumed: Sequence[tuple[asyncio.Future[Any], object]]) -> None:
    for done, out in resumed:
        if done.done():  # its caller was cancelled
            continue
        if isinstance(out, _Failed):
            done.set_exception(out.error)
        else:
            done.set_result(out)
