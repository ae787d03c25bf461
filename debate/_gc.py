"""The cyclic garbage collector, handled in one place: when it is held and when frozen.

Three places gain from steering it, all for the same reason: the collector re-scans every
live container object on each full collection, and the objects that make those scans long
(the imported ``openai`` SDK's classes, numpy, a million decision records) are never in a
reference cycle that needs it. Reference counting still frees all of them. The measured costs
each choice removes are on the documentation's performance page, beside the benchmark that
reproduces them.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_held(*, restore: bool = True) -> Iterator[None]:
    """Hold the cycle collector for a block of bounded, acyclic work; then restore it.

    Restores the collector only if it was running, so nested holds and a caller that turned
    it off itself are left as they were. ``restore=False`` is for a process that exits
    after the block (the ``debate`` command's own process): turning the collector back on
    would only let it run once more on the way out.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled and restore:
            _promote_survivors()
            gc.enable()


def _promote_survivors() -> None:
    """Move every tracked object to the oldest generation, without scanning any of them.

    Re-enabled as it was, the collector scans everything the held block made at its next
    allocation and again on the way to the oldest generation (deciding 20,000 items: a
    0.19 s collection, 4% of the call). What the block leaves alive is its result, not
    garbage. Skipped when something else froze objects: unfreezing would undo that.
    """
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def freeze_survivors(*, collect: bool = False) -> None:
    """Move every object alive now to the collector's permanent generation.

    Later collections then scan only what was made afterwards. ``collect`` first frees what
    is already garbage, for a long-lived process (a server, once its models are built); a
    process about to exit skips it, since freezing alone spares the shutdown's walk.
    """
    if collect:
        gc.collect()
    gc.freeze()
