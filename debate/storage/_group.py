"""Group commit: writes awaited on an event loop, made together in one transaction.

The service's runner stores a reply for each of its calls (some 400 a second at 64 jobs):
one worker-thread hop and one write transaction per reply was about a seventh of the runner
process's CPU (``benchmarks/bench_service.py``; the hops, seven statements a write, and the
interpreter lock handed back and forth for each). Here a write waits in a list while
another is being written, and the next transaction takes every write waiting: under load
one hop and one transaction store many replies, and a lone write goes at once, as before.
Each caller still resumes only once its own write is committed.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

Item = TypeVar("Item")

Waiter = tuple[asyncio.AbstractEventLoop, "asyncio.Future[None]"]


class GroupCommit(Generic[Item]):
    """Calls ``write(items)`` in a worker thread for every item waiting, one batch at a time.

    Args:
        write: Writes items in order in one transaction; raises if none was written.
    """

    def __init__(self, write: Callable[[Sequence[Item]], None]) -> None:
        self._write = write
        self._waiting: list[tuple[Item, Waiter]] = []
        self._busy = False
        """Whether a worker is writing (it takes whatever waits when it is done)."""
        self._guard = threading.Lock()

    async def put(self, item: Item) -> None:
        """Write ``item``; return once it is committed (raise what its write raised)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        with self._guard:
            self._waiting.append((item, (loop, done)))
            start, self._busy = not self._busy, True
        if start:
            loop.run_in_executor(None, self._drain)
        await done

    def _drain(self) -> None:
        """Write batches until none waits (in a worker thread)."""
        while True:
            with self._guard:
                batch, self._waiting = self._waiting, []
                if not batch:
                    self._busy = False
                    return
            try:
                self._write([item for item, _ in batch])
            except Exception:  # each item alone, so that one's failure is its own
                for item, waiter in batch:
                    _settle([waiter], self._one(item))
            else:
                _settle([waiter for _, waiter in batch], None)

    def _one(self, item: Item) -> BaseException | None:
        try:
            self._write([item])
        except Exception as exc:
            return exc
        return None


def _settle(waiters: Sequence[Waiter], error: BaseException | None) -> None:
    """Resume each waiter on its own loop (one hand-over per loop, not per item)."""
    by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
    for loop, done in waiters:
        by_loop.setdefault(loop, []).append(done)
    for loop, futures in by_loop.items():
        try:
            loop.call_soon_threadsafe(_resume, futures, error)
        except RuntimeError:  # the loop closed: nobody waits there any more
            pass


def _resume(futures: Sequence[asyncio.Future[None]], error: BaseException | None) -> None:
    for done in futures:
        if done.done():  # its caller was cancelled
            continue
        if error is None:
            done.set_result(None)
        else:
            done.set_exception(error)
