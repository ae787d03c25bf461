"""The interpreter's thread switch interval, shortened in one place and restored.

``debate decide`` computes the next block's statistics on one thread while the main thread
builds this block's records (:mod:`debate.panel._ahead`). The statistics are numpy calls
that release the interpreter lock; between two calls their thread needs the lock back, and
the main thread, busy in Python, gives it up only when the switch interval (5 ms by
default) has passed. Thousands of such waits made the statistics' thread the slower side
of the pipeline: on 100,000 x 8 scores, blocks alone took ``decide`` from 16.3 to 15.3 s
of wall time on the 2-core test machine, blocks with a 0.2 ms interval to 13.3-13.9 s. The
interval changes when threads take turns, never what any of them computes.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from debate._held import SharedHold

QUICK_SWITCH_S = 0.0002
"""The switch interval while a pipeline's threads run: a lock handed back within 0.2 ms."""

_HOLD = SharedHold(sys.getswitchinterval, sys.setswitchinterval)


@contextmanager
def quick_switches(interval: float = QUICK_SWITCH_S) -> Iterator[None]:
    """Run the block with a switch interval of at most ``interval``; then restore it.

    Nested and concurrent blocks (two decisions on two threads) share the hold: the first
    sets the interval, unless it is already shorter, and the last to leave restores the
    one found before the first.
    """
    with _HOLD.held(lambda found: min(interval, found)):
        yield
