"""A policy's ruling on one decision: declare the lead (its guarantee holds) or escalate.

A :class:`~debate.records._policy.Policy` (chosen on labelled items by ``debate validity
--target-agreement``) gives each tier of judges weights, a calibration and a threshold. One
ruling serves both products: recorded tables (:mod:`debate.judgments._policy`, where each
tier's decisions are made with that tier's weights) and the live panel, where
:class:`PolicyRule` is the cascade's escalation rule and rewrites each tier's decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from debate.panel._cascade import Escalation, upto
from debate.panel._evidence import doubt_features, judge_row
from debate.records import Outcome, PanelResult, Policy, Side, TierPolicy


@dataclass(frozen=True)
class Ruling:
    """What a tier of a policy says of one decision."""

    declared: bool
    p_agree: float | None
    """Calibrated ``p_agree`` of the lead; None without a lead (even evidence)."""
    reason: str


def tier_of(policy: Policy, tier: int) -> TierPolicy:
    """The policy's tier for a decision on tiers 1 to ``tier`` (its last, past its end)."""
    return policy.tiers[min(tier, len(policy.tiers)) - 1]


def rule(
    policy: Policy,
    tier: TierPolicy,
    lead: str | None,
    evidence: float | None,
    judge_evidence: Mapping[str, float | None],
) -> Ruling:
    """Declare ``lead`` where its calibrated ``p_agree`` reaches the tier's threshold.

    ``evidence`` is the panel's ``L`` under the tier's weights; ``judge_evidence`` each
    judge's own evidence, whose doubt the calibration reads beside ``|L|``.
    """
    if lead is None or evidence is None or tier.calibrator is None:
        return Ruling(False, None, f"tier {tier.tier}: the judges' evidence is even, no lead")
    doubt = None  # a policy chosen before the doubt features has none to read
    if tier.calibrator.doubt:
        doubt = doubt_features(judge_row(tier.judges, judge_evidence))[0]
    p = float(tier.calibrator.predict(abs(evidence), doubt))
    if tier.threshold is None:
        return Ruling(False, p, f"tier {tier.tier} declares nothing under this policy")
    if p < tier.threshold:
        return Ruling(
            False,
            p,
            f"tier {tier.tier}: p_agree {p:.3f} for {lead} is below the threshold "
            f"{tier.threshold:.3f}",
        )
    return Ruling(
        True,
        p,
        f"{lead} declared at tier {tier.tier}: p_agree {p:.3f} >= {tier.threshold:.3f}, the "
        f"threshold at which agreement with people is at least {policy.target_agreement:g} "
        f"with probability {1 - policy.risk:g}",
    )


def gate_note(gate: Outcome) -> list[str]:
    """When the policy declares where the rules alone did not, the rules' reasons follow."""
    return [] if gate == "winner" else [f"the decision rules alone said {gate}:"]


def policy_evidence(tier: TierPolicy, judge_evidence: Mapping[str, float | None]) -> float:
    """The panel's log-odds with the tier's weights (a judge the policy lacks weighs 0)."""
    return sum(tier.weights.get(j, 0.0) * x for j, x in judge_evidence.items() if x is not None)


class PolicyRule:
    """The live cascade under a policy: each tier's decision is ruled on, then escalated.

    :meth:`settle` rewrites a decision on tiers 1 to ``k`` with the policy's tier ``k``
    (its weights on the judges' evidence, its calibration, its threshold): ``winner`` with a
    calibrated ``p_agree``, or ``escalate``. Called as an escalation rule, it asks the next
    tier unless the settled decision is a winner; past the last tier, ``escalate`` stays:
    the item is for people.
    """

    def __init__(self, policy: Policy) -> None:
        if policy.kind != "scores":
            raise ValueError(
                "policy: a live panel scores arguments; this policy was chosen on verdict "
                "tables, so choose one on score tables (debate calibrate writes them)"
            )
        self.policy = policy

    def settle(self, decided: PanelResult, tier: int) -> PanelResult:
        """The decision on tiers 1 to ``tier`` under the policy."""
        d = decided.decision
        policy_tier = tier_of(self.policy, tier)
        evidence = policy_evidence(policy_tier, d.judge_evidence)
        lead: Side | None = "PRO" if evidence > 0 else "CON" if evidence < 0 else None
        ruling = rule(self.policy, policy_tier, lead, evidence, d.judge_evidence)
        update = {
            "outcome": "winner" if ruling.declared else "escalate",
            "winner": lead if ruling.declared else None,
            "gate": d.outcome,
            "lead": lead,
            "evidence": evidence,
            "p_agree": ruling.p_agree,
            "p_agree_calibrated": ruling.p_agree is not None,
            "reasons": [ruling.reason, *gate_note(d.outcome), *d.reasons],
            "recommendation": self.recommendation(ruling.declared),
        }
        return decided.model_copy(update={"decision": d.model_copy(update=update)})

    def recommendation(self, declared: bool) -> str:
        """What to do with a decision under the policy, with its guarantee in words."""
        if declared:
            return (
                f"Act on the verdict within the policy's guarantee: {self.policy.guarantee}, "
                f"provided that {self.policy.condition}."
            )
        return (
            "The panel is not confident enough for the policy's guarantee: ask a stronger tier "
            "of judges or people to decide, and add their ruling to the labels of the next "
            "calibration."
        )

    def __call__(self, decided: PanelResult, tier: int) -> Escalation:
        """Ask the next tier unless the policy declared."""
        d = decided.decision
        if d.outcome == "winner":
            return Escalation(False, f"{upto(tier)}: {d.winner} declared under the policy")
        return Escalation(True, f"{upto(tier)}: below the policy's threshold")
