"""One number dealt out as evenly as it divides: ``total`` over ``count`` takers.

A batch's concurrency over its processes or Ray workers, and a service's workers over its
runner processes, are shared the same way, so that the parts always add up to the whole.
"""

from __future__ import annotations


def share(total: int, count: int, k: int) -> int:
    """Taker ``k``'s part of ``total`` over ``count`` (the first ones take the remainder)."""
    return total // count + (1 if k < total % count else 0)
