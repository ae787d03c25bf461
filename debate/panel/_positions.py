"""Who sees what first: per-judge presentation orders, counterbalanced across the panel.

LLM judges favour what they read first (or last). Each judge therefore reads the two sides,
and the arguments within a side, in its own order: half the panel sees PRO first and half
CON first, and within a side the orders are rows of a balanced Latin square (Williams
design) over argument positions, so across ``n`` judges every argument is shown in every
position once. The randomness (which judge gets which row, which argument is which symbol)
comes from a seeded generator, so the same seed gives the same orders.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Literal

from debate.records import Frozen, Side

PresentationMode = Literal["counterbalanced", "fixed"]


class Presentation(Frozen):
    """The order one judge reads a transcript in."""

    sides: tuple[Side, Side]
    """Which side's arguments come first."""
    order: tuple[str, ...]
    """Argument ids in the order shown."""

    @property
    def positions(self) -> dict[str, int]:
        """Argument id to 0-based shown position."""
        return {arg_id: i for i, arg_id in enumerate(self.order)}

    def mirrored(self) -> Presentation:
        """The same within-side orders with the sides swapped (for the swap check)."""
        first = [a for a in self.order if a.startswith(self.sides[0])]
        second = [a for a in self.order if a.startswith(self.sides[1])]
        return Presentation(sides=(self.sides[1], self.sides[0]), order=(*second, *first))


def williams_rows(n: int) -> list[list[int]]:
    """Rows of a balanced Latin square (Williams design) on ``n`` symbols.

    Every symbol appears once in every position across the first ``n`` rows; for even
    ``n`` each symbol also follows every other exactly once (first-order balance). For odd
    ``n`` the mirrored rows complete the balance; they are appended after the first ``n``.
    """
    if n <= 0:
        return []
    base = [0]
    low, high = 1, n - 1
    take_low = True
    while len(base) < n:
        base.append(low if take_low else high)
        if take_low:
            low += 1
        else:
            high -= 1
        take_low = not take_low
    rows = [[(symbol + shift) % n for symbol in base] for shift in range(n)]
    if n % 2 == 1:
        rows += [list(reversed(row)) for row in rows]
    return rows


def presentations(
    judges: int,
    pro_ids: Sequence[str],
    con_ids: Sequence[str],
    *,
    rng: random.Random,
    mode: PresentationMode = "counterbalanced",
) -> list[Presentation]:
    """One presentation per judge.

    ``fixed`` shows every judge PRO first in transcript order (the reference behaviour,
    kept for comparison); ``counterbalanced`` is described in the module docstring.
    """
    if mode == "fixed":
        fixed = Presentation(sides=("PRO", "CON"), order=(*pro_ids, *con_ids))
        return [fixed] * judges
    sides: list[tuple[Side, Side]] = [
        ("PRO", "CON") if i % 2 == 0 else ("CON", "PRO") for i in range(judges)
    ]
    rng.shuffle(sides)
    within: dict[Side, list[list[str]]] = {}
    side: Side
    for side, ids in (("PRO", pro_ids), ("CON", con_ids)):
        symbols = list(ids)
        rng.shuffle(symbols)  # which argument plays which Latin-square symbol
        n = len(symbols)
        rows = williams_rows(n)
        blocks = len(rows) // n  # 1 for even n; 2 for odd n (the mirrored rows)
        start = rng.randrange(n)
        # The first n judges get the n rows of one square (every argument in every
        # position once); further judges continue with the next block.
        within[side] = [
            [symbols[s] for s in rows[(start + j) % n + n * ((j // n) % blocks)]]
            for j in range(judges)
        ]
    return [
        Presentation(
            sides=sides[j],
            order=(*within[sides[j][0]][j], *within[sides[j][1]][j]),
        )
        for j in range(judges)
    ]


def labelled_order(items: Sequence[str], *, rng: random.Random) -> list[tuple[str, str, int]]:
    """Shuffle items and label them A, B, C... after the shuffle.

    Returns ``(label, item, shown_position)`` in shown order; labels follow presentation
    order (A is shown first), so a label says nothing about the item behind it.
    """
    shuffled = list(items)
    rng.shuffle(shuffled)
    return [(label_of(i), item, i) for i, item in enumerate(shuffled)]


def label_of(index: int) -> str:
    """A, B, ..., Z, AA, AB, ... for 0, 1, ..."""
    label = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        label = chr(65 + rest) + label
    return label
