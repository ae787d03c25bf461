"""One BLAS thread for products whose inner dimension is the panel's judges.

The batched bootstrap multiplies items x judges by judges x replicates: an inner dimension
of a few judges, so each product is bound by memory, not arithmetic. numpy's OpenBLAS
still splits it over every core, and its threads spin while they wait for work; on a
machine whose cores are busy that spinning was a third of ``debate decide``'s CPU time
(20,000 items x 8 judges: 8.2 s of process CPU, 4.9 s with one thread). The thread count
does not change a product's value: OpenBLAS splits the output among its threads, never
the sum of one element.

The count is set through the library numpy loaded, found by its exported symbol, and set
back afterwards. Where no such library is found (another BLAS, another platform) nothing
is changed and every result is the same.
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from debate._held import SharedHold

log = logging.getLogger(__name__)

_PREFIXES = ("scipy_openblas", "openblas")
_SUFFIXES = ("64_", "_64_", "")


@cache
def _controls() -> tuple[Any, Any] | None:
    """(get, set) of the thread count of numpy's bundled OpenBLAS, or None."""
    folder = Path(np.__file__).resolve().parent.parent / "numpy.libs"
    for path in sorted(folder.glob("*openblas*")):
        try:
            lib = ctypes.CDLL(str(path))
        except OSError:
            continue
        for prefix in _PREFIXES:
            for suffix in _SUFFIXES:
                get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                put = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                if get is not None and put is not None:
                    get.restype = ctypes.c_int
                    put.argtypes = [ctypes.c_int]
                    return get, put
    log.debug("no OpenBLAS thread control found beside numpy; BLAS threads left as they are")
    return None


def _threads() -> int:
    get, _ = _controls() or (None, None)
    return int(get()) if get is not None else 1


def _set_threads(count: int) -> None:
    _, put = _controls() or (None, None)
    if put is not None:
        put(count)


_HOLD = SharedHold(_threads, _set_threads)


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with numpy's OpenBLAS on one thread, then restore its count.

    Nested and concurrent blocks share the hold: the first sets one thread, the last to
    leave restores the count found before the first.
    """
    if _controls() is None:
        yield
        return
    with _HOLD.held(lambda found: 1):
        yield
