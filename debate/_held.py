"""A process-wide setting held by nested and concurrent blocks together, then restored.

Two settings are changed for the length of a block of work and belong to the whole process:
OpenBLAS's thread count (:mod:`debate.stats._blas`) and the interpreter's switch interval
(:mod:`debate._switching`). Two decisions on two threads may hold either at once, so the
first block to enter sets it, the last to leave restores what the first found; a block
that ends first must not put back a value while another still counts on the new one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

T = TypeVar("T")


class SharedHold(Generic[T]):
    """One setting, read by ``get`` and written by ``put``, held by any number of blocks."""

    def __init__(self, get: Callable[[], T], put: Callable[[T], None]) -> None:
        self._get, self._put = get, put
        self._lock = threading.Lock()
        self._depth = 0
        self._before: list[T] = []  # the value the first block found, while one is held

    @contextmanager
    def held(self, value: Callable[[T], T]) -> Iterator[None]:
        """Run the block with the setting at ``value(found)``; the last block out restores it.

        ``found`` is the setting as the first block found it; later blocks change nothing.
        """
        with self._lock:
            if self._depth == 0:
                found = self._get()
                self._before.append(found)
                self._put(value(found))
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0:
                    self._put(self._before.pop())
