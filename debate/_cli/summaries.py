"""Lines a command's summary shares: what the budget stopped, which tier decided.

``run``, ``judge``, ``council`` and ``calibrate`` print them under their own summary.
"""

from __future__ import annotations

from debate.records import Cascade, Usage


def budget_lines(usage: Usage) -> list[str]:
    """What the budget stopped, one line per call not made (none without a budget)."""
    if usage.budget is None:
        return []
    b = usage.budget
    caps = [f"${b.max_cost_usd:g}" if b.max_cost_usd is not None else None]
    caps.append(f"{b.max_tokens} tokens" if b.max_tokens is not None else None)
    head = (
        f"Budget: {' and '.join(c for c in caps if c)}; spent ${b.spent_usd:.4f}, "
        f"{b.spent_tokens} tokens; {len(usage.skipped)} calls not made"
    )
    return [head] + [
        f"  - not made: {s.phase} {s.actor} ({s.model}): {s.reason}" for s in usage.skipped
    ]


def cascade_lines(cascade: Cascade | None, tier: int) -> list[str]:
    """Which tier decided and why each tier stopped or went on (none without tiers)."""
    if cascade is None or len(cascade.steps) < 2:
        return []
    cost = "" if cascade.cost_usd is None else f", ${cascade.cost_usd:.4f}"
    head = (
        f"Cascade: decided by tier {tier} of {len(cascade.steps)}; {cascade.calls} judge calls"
        f"{cost} (asking every tier: {cascade.calls_all_tiers} calls)"
    )
    steps = [f"  - tier {s.tier} ({', '.join(s.judges)}): {s.reason}" for s in cascade.steps]
    return [head, *steps]
