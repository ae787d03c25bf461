"""Whether a verdict table's BA rows look written "as read" rather than as documented.

In a verdict table A is always the first option of the item as the table lists it, also in
a row of order ``BA``, where the judge was shown the second option first
(``docs/judgments.md``). A converter that writes the verdict as the judge read it (A = the
answer it saw first) makes every judge that read both orders look position-sensitive: its
two readings disagree, so each counts as a tie and the panel's coverage collapses. Nothing
in one row can tell; the pattern over the table can.

The rule (:func:`ba_as_read`), over the judges that read both orders of at least
:data:`MIN_BOTH_ORDERS` items:

1. more than half of them disagree with themselves (the AB and the BA verdict differ) on
   more than half of their items;
2. more than half of them agree with themselves on more than half of their items once A
   and B are swapped in their BA rows;
3. the A/B disagreements are not one-sided: neither "A reading AB, B reading BA" nor the
   reverse makes up more than :data:`ONE_SIDED` of them. A judge that always picks the
   answer shown first (or second) disagrees that way on every item, and swapping would
   make it consistent too, but that is position bias in correctly written rows.
"""

from __future__ import annotations

import logging

import numpy as np

from debate.records import ORDERS, VerdictTable

log = logging.getLogger(__name__)

MIN_BOTH_ORDERS = 10
"""Items a judge must have read in both orders to count: on fewer, a majority of its
readings is a handful of coin flips."""
ONE_SIDED = 0.9
"""Share of one direction among a panel's self-disagreements above which they are read as
position bias, not as relabelled rows (relabelled rows disagree in both directions, as
often as the truth is A or B)."""
BA_AS_READ = (
    "BA rows look written as read: in a BA row, A is still the first option of the table; "
    "swap A and B in those rows"
)
"""The warning's fixed part: the likely cause and the fix."""
_SWAP = np.array([1, 0, 2], dtype=np.int8)


def ba_as_read(table: VerdictTable) -> str | None:
    """The one-line warning when the table's BA rows look written as read, else None.

    The rule is in the module docstring; the warning names the cause, the fix and the
    counts it rests on, and is logged.
    """
    n_judges = len(table.judges)
    size = len(table.items) * n_judges
    ab, ba = np.full(size, -1, np.int8), np.full(size, -1, np.int8)
    cell = table.item.astype(np.int64) * n_judges + table.judge
    for code, verdicts in ((ORDERS.index("AB"), ab), (ORDERS.index("BA"), ba)):
        rows = table.order == code
        verdicts[cell[rows]] = table.verdict[rows]
    both = (ab >= 0) & (ba >= 0)
    judge = np.arange(size) % n_judges
    count = np.bincount(judge[both], minlength=n_judges)
    eligible = count >= MIN_BOTH_ORDERS
    if not eligible.any():
        return None
    differ = both & (ab != ba)
    swapped = both & (ab != _SWAP[np.maximum(ba, 0)])
    with np.errstate(invalid="ignore", divide="ignore"):
        sensitive = np.bincount(judge[differ], minlength=n_judges) / count > 0.5
        healed = np.bincount(judge[swapped], minlength=n_judges) / count < 0.5
    n = int(eligible.sum())
    n_sensitive, n_healed = int((sensitive & eligible).sum()), int((healed & eligible).sum())
    counted = differ & eligible[judge]
    first = int((counted & (ab == 0) & (ba == 1)).sum())  # A reading AB, B reading BA
    second = int((counted & (ab == 1) & (ba == 0)).sum())
    one_sided = max(first, second) > ONE_SIDED * (first + second)
    if not (2 * n_sensitive > n and 2 * n_healed > n) or one_sided:
        return None
    warning = (
        f"{BA_AS_READ} ({n_sensitive} of the {n} judges that read both orders of at least "
        f"{MIN_BOTH_ORDERS} items disagree with themselves on most of them, and {n_healed} "
        "agree with themselves on most once A and B are swapped in their BA rows)"
    )
    log.warning("%s: %s", table.source, warning)
    return warning
