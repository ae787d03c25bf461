"""The cascade of judge tiers: the cheapest tier decides alone; a higher one only when needed.

Judges (and council reviewers) carry a ``tier``, 1 the cheapest. Tier 1 is asked first and
the panel concludes on it; an :class:`EscalationRule` then looks at that decision and says
whether to ask tier 2, after which the panel concludes on tiers 1 and 2 together
(cumulative: a higher tier adds judges, it does not overrule the lower ones), and so on.
So only the items the lower tiers could not settle make the higher tiers' calls.

The rule is pluggable because "confident enough" is a policy, not a statistic: the default
for a debate asks the next tier when the outcome is not a winner, and a calibrated rule
(a probability of agreement against a per-tier threshold) plugs in the same way. A rule
that always escalates (:func:`ask_every_tier`) asks every tier on every item, as a
calibration must (a judge's track record needs its calls on every item, not only the hard
ones).

Every result records the tiers in a :class:`~debate.records._result.Cascade`: who was
asked, why the cascade stopped or went on after each tier, and what it cost (from the
run's usage meter) against asking every tier.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from debate.records import Cascade, PanelResult, TierStep, TokenCounts
from debate.runtime import UsageMeter

R = TypeVar("R")
R_contra = TypeVar("R_contra", contravariant=True)


@dataclass(frozen=True)
class Escalation:
    """A rule's answer: ask the next tier or not, and why (recorded in the result)."""

    escalate: bool
    reason: str
    """One clause, e.g. ``"tier 1: too close, not a winner"``; the cascade adds which tier
    it asked next, or that none is left."""


class EscalationRule(Protocol[R_contra]):
    """Whether the decision so far is not confident enough, so the next tier is asked.

    Called after each tier with the result concluded on tiers 1 to ``tier`` together (a
    :class:`~debate.records._result.PanelResult` for a debate, a
    :class:`~debate.records._council.CouncilResult` for a council), including after the
    last tier, whose reason is recorded too (a later stage may hand those items to people).
    """

    def __call__(self, decided: R_contra, tier: int) -> Escalation:
        """The rule's answer for the decision on tiers 1 to ``tier``."""
        ...


def upto(tier: int) -> str:
    """How a reason names the judges a decision rests on: ``tier 1``, ``tiers 1-2``."""
    return "tier 1" if tier == 1 else f"tiers 1-{tier}"


def escalate_unless_winner(decided: PanelResult, tier: int) -> Escalation:
    """The default rule of a debate: ask the next tier unless the panel declared a winner."""
    decision = decided.decision
    if decision.outcome == "winner":
        return Escalation(False, f"{upto(tier)}: {decision.winner} wins")
    outcome = decision.outcome.replace("_", " ")
    return Escalation(True, f"{upto(tier)}: {outcome}, not a winner")


def ask_every_tier(decided: object, tier: int) -> Escalation:
    """Ask every tier on every item (a calibration measures every judge on every item)."""
    return Escalation(True, f"{upto(tier)}: every tier is asked")


@dataclass(frozen=True)
class Tier:
    """One tier of a panel or council: its members and what asking them all would make."""

    number: int
    members: list[str]
    """Names in config order."""
    readings: int
    """Calls the members make with no re-ask or retry (one per judge, two with ``swap``)."""


def tiers_of(members: Sequence[tuple[str, int]], readings_each: int) -> list[Tier]:
    """The tiers of ``(name, tier)`` pairs, lowest first, names in their given order."""
    tiers = []
    for number in sorted({tier for _, tier in members}):
        names = [name for name, tier in members if tier == number]
        tiers.append(Tier(number=number, members=names, readings=len(names) * readings_each))
    return tiers


async def run_cascade(
    tiers: Sequence[Tier],
    ask: Callable[[Tier], Awaitable[None]],
    conclude: Callable[[int], Awaitable[R]],
    rule: EscalationRule[R],
    meter: UsageMeter,
) -> tuple[R, Cascade]:
    """Ask the tiers in turn until ``rule`` is satisfied or none is left.

    Args:
        tiers: The tiers, lowest first (:func:`tiers_of`).
        ask: Asks every member of one tier (keeping what they return).
        conclude: The decision on tiers 1 to the given one together, with that tier recorded
            (awaited: a live panel's conclusions are ruled with others ready at once).
        rule: Whether a decision is not confident enough, so the next tier is asked.
        meter: The run's usage meter: each tier's calls are what it counted while that tier
            was asked (nothing else of the run calls a model meanwhile).

    Returns:
        The last decision, and the cascade's record.
    """
    steps: list[TierStep] = []
    decided: R | None = None
    for i, tier in enumerate(tiers):
        following = tiers[i + 1] if i + 1 < len(tiers) else None
        found, step = await _ask_tier(tier, following, ask, conclude, rule, meter)
        decided = found
        steps.append(step)
        if not step.escalated:
            break
    if decided is None:
        raise ValueError("tiers: a cascade needs at least one tier")
    return decided, _record(steps, tiers[len(steps) :])


async def _ask_tier(
    tier: Tier,
    following: Tier | None,
    ask: Callable[[Tier], Awaitable[None]],
    conclude: Callable[[int], Awaitable[R]],
    rule: EscalationRule[R],
    meter: UsageMeter,
) -> tuple[R, TierStep]:
    """Ask one tier and decide on the tiers so far; the step says whether to go on."""
    before = _tally(meter)
    await ask(tier)
    usage, cost = _spent(meter, before)
    decided = await conclude(tier.number)
    answer = rule(decided, tier.number)
    step = TierStep(
        tier=tier.number,
        judges=list(tier.members),
        asked=True,
        escalated=answer.escalate and following is not None,
        reason=_reason(answer, following),
        usage=usage,
        cost_usd=cost,
    )
    return decided, step


def _record(steps: list[TierStep], skipped: Sequence[Tier]) -> Cascade:
    """The cascade's record: the tiers asked, those skipped, and what the asked ones cost.

    ``calls_all_tiers`` adds the skipped tiers' estimated readings, the calls saved.
    """
    deciding = steps[-1].tier
    steps = steps + [
        TierStep(
            tier=t.number,
            judges=list(t.members),
            asked=False,
            reason=f"not asked: {upto(deciding)} decided",
        )
        for t in skipped
    ]
    asked = [s for s in steps if s.asked]
    costs = [s.cost_usd for s in asked]
    calls = sum(s.usage.calls for s in asked)
    return Cascade(
        steps=steps,
        calls=calls,
        calls_all_tiers=calls + sum(t.readings for t in skipped),
        tokens=sum(s.usage.prompt_tokens + s.usage.completion_tokens for s in asked),
        cost_usd=None if None in costs else round(sum(c for c in costs if c is not None), 6),
    )


def _reason(answer: Escalation, following: Tier | None) -> str:
    """The rule's reason, and what the cascade did about it."""
    if following is None:
        return f"{answer.reason}; no higher tier to ask" if answer.escalate else answer.reason
    verb = "asked" if answer.escalate else "not needed"
    return f"{answer.reason}; tier {following.number} {verb}"


_Tally = tuple[int, dict[str, tuple[int, ...]]]


def _tally(meter: UsageMeter) -> _Tally:
    """The meter's requests and per-model token rows now."""
    return meter.calls, {name: tuple(row) for name, row in meter.by_model.items()}


def _spent(meter: UsageMeter, before: _Tally) -> tuple[TokenCounts, float | None]:
    """What the meter counted since ``before``: requests and tokens, and their cost."""
    calls, rows = before
    by_model: dict[str, TokenCounts] = {}
    for name, row in meter.by_model.items():
        old = rows.get(name, (0, 0, 0, 0))
        delta = [now - then for now, then in zip(row, old, strict=True)]
        if any(delta):
            by_model[name] = TokenCounts(
                calls=delta[0],
                prompt_tokens=delta[1],
                completion_tokens=delta[2],
                cached_tokens=delta[3],
            )
    usage = TokenCounts(
        calls=meter.calls - calls,
        prompt_tokens=sum(c.prompt_tokens for c in by_model.values()),
        completion_tokens=sum(c.completion_tokens for c in by_model.values()),
        cached_tokens=sum(c.cached_tokens for c in by_model.values()),
    )
    return usage, meter.table.cost(by_model)
