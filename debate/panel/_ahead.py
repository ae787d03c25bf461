"""A large batch in blocks: the next block's statistics on a thread while this one is ruled.

A batch's statistics are numpy over all its items (most of their time in calls that release
the interpreter lock); its rulings, records and reason texts are Python item by item. One
after the other, the two cores of a small machine take turns idling. In blocks of
:data:`BLOCK_ITEMS`, one thread computes block k + 1's statistics while the caller rules
block k. Every statistic is an item's own, with draws that depend on the seed and the
judges, not on the batch, so a block's numbers are its items' rows of the whole batch's,
bit for bit, as long as a block stays past every small-batch path (``EXACT_ITEMS``,
``SMALL_BATCH``: tens of items); :func:`blocks` never makes one under ``BLOCK_ITEMS``.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

from debate._switching import quick_switches

if TYPE_CHECKING:
    from debate.panel._decision import ScoreBatch

N = TypeVar("N")

BLOCK_ITEMS = 10_000
"""The fewest items a block has; a batch under twice this is one block, on the caller's thread."""


def blocks(size: int) -> list[slice]:
    """``range(size)`` in equal blocks of at least :data:`BLOCK_ITEMS` items (one if fewer)."""
    count = max(1, size // BLOCK_ITEMS)
    bounds = [size * k // count for k in range(count + 1)]
    return [slice(start, stop) for start, stop in zip(bounds, bounds[1:], strict=False)]


def each_block(
    batch: ScoreBatch,
    compute: Callable[[ScoreBatch], N],
    use: Callable[[slice, ScoreBatch, N], None],
) -> None:
    """``use(block, items, compute(items))`` for each block in order, computing one ahead.

    ``compute`` runs on one worker thread, block after block; ``use`` on the caller's, in
    block order. An error on either side is raised here; the blocks not yet computed are
    then cancelled.
    """
    found = blocks(batch.size)
    if len(found) == 1:
        use(found[0], batch, compute(batch))
        return
    parts = [batch.sliced(block) for block in found]
    with quick_switches(), ThreadPoolExecutor(1, thread_name_prefix="debate-ahead") as ahead:
        futures: list[Future[N]] = [ahead.submit(compute, items) for items in parts]
        try:
            for block, items, numbers in zip(found, parts, futures, strict=True):
                use(block, items, numbers.result())
        finally:
            for waiting in futures:
                waiting.cancel()
