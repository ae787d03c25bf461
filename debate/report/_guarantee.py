"""The guarantee box: what a policy chosen for a target agreement promises, and what it bought.

Shown on the validity page (and as text in its Markdown) when ``debate validity
--target-agreement`` chose a policy: the target and the risk, the guarantee sentence and the
condition it rests on, the coverage the policy bought on its calibration units and the
agreement there, and per tier of the cascade its judges, threshold and declared share. A
target the labels cannot support is refused before any report is written, so there is no
box for a refusal.
"""

from __future__ import annotations

from debate.records import Policy, TierPolicy
from debate.report._markdown import cell, md_table
from debate.report._markup import esc, table

TIER_HEAD = [
    "tier",
    "judges (weight)",
    "threshold on p_agree",
    "units reaching it",
    "declared",
    "share of all",
    "agreement there",
]


def _sentence(text: str) -> str:
    """A stored phrase as a sentence: capital first, full stop last."""
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def _promise(policy: Policy) -> str:
    return (
        f"Agreement with people at least {policy.target_agreement:.0%}, "
        f"with probability at least {1 - policy.risk:.0%}"
    )


def _bought(policy: Policy) -> str:
    declared = sum(t.declared for t in policy.tiers)
    agreement = (
        "declaring none of them"
        if policy.agreement is None
        else f"agreeing with people's majority on {policy.agreement:.1%} of those"
    )
    return (
        f"On its {policy.labelled_units:,} calibration units (from "
        f"{policy.calibration_items:,} items) the policy declared {policy.coverage:.1%} "
        f"({declared:,}), {agreement}; the other {1 - policy.coverage:.1%} are escalated to "
        f"people.{_clustered(policy)}"
    )


def _clustered(policy: Policy) -> str:
    """Where units of one item moved together, how much the test discounted them."""
    effect = max((t.design_effect for t in policy.tiers), default=1.0)
    if effect <= 1.0:
        return ""
    return (
        f" Pairs of one item agreed or erred together {effect:.2f} times as much as "
        "independent pairs would, and the test counted them as that many times fewer."
    )


def _judges(tier: TierPolicy) -> list[str]:
    """Every judge the tier counts with its weight; a weight 0 is a judge left out."""
    return [f"{j} {_weight(tier.weights[j])}" for j in tier.judges]


def _weight(w: float) -> str:
    return "0 (left out)" if w == 0 else f"{w:.2f}"


def _tier_cells(tier: TierPolicy, judges: str) -> list[str]:
    return [
        str(tier.tier),
        judges,
        f"{tier.threshold:.3f}" if tier.threshold is not None else "declares nothing",
        f"{tier.labelled:,}",
        f"{tier.declared:,}",
        f"{tier.coverage:.1%}",
        "—" if tier.agreement is None else f"{tier.agreement:.1%}",
    ]


def _tier_note(policy: Policy) -> str:
    if len(policy.tiers) == 1:
        return (
            "The threshold was chosen by fixed-sequence testing on the calibration units "
            "(Learn then Test; Trust or Escalate, Jung, Brahman and Choi, ICLR 2025)."
        )
    return (
        f"A cascade: an item goes to tier k + 1 when tier k is below its threshold. Each "
        f"tier's threshold was chosen by fixed-sequence testing at risk "
        f"{policy.risk / len(policy.tiers):.3g} (the risk split over {len(policy.tiers)} "
        "tiers), so the whole cascade keeps the stated risk (Learn then Test; Trust or "
        "Escalate, Jung, Brahman and Choi, ICLR 2025)."
    )


def _tier_html(tier: TierPolicy) -> list[str]:
    # Each judge is kept whole beside its weight when the cell wraps.
    judges = ", ".join(f'<span class="nowrap">{esc(j)}</span>' for j in _judges(tier))
    return [c if i == 1 else esc(c) for i, c in enumerate(_tier_cells(tier, judges))]


def guarantee_html(policy: Policy) -> str:
    """The box on the validity page (every stored phrase and name escaped)."""
    rows = [_tier_html(t) for t in policy.tiers]
    facts = [
        ("target agreement", f"{policy.target_agreement:g}"),
        ("risk", f"{policy.risk:g}"),
        ("coverage bought", f"{policy.coverage:.1%}"),
        ("agreement there", "—" if policy.agreement is None else f"{policy.agreement:.1%}"),
    ]
    items = "".join(f"<div><dt>{esc(k)}</dt><dd>{esc(v)}</dd></div>" for k, v in facts)
    return (
        '<section id="guarantee" class="verdict outcome-winner">'
        '<p class="kicker">The guarantee of the chosen policy</p>'
        f"<h2>{esc(_promise(policy))}</h2>"
        f'<p class="topic">{esc(_sentence(policy.guarantee))}</p>'
        f"<p><strong>Condition.</strong> {esc(_sentence(policy.condition))}</p>"
        f'<dl class="facts">{items}</dl>'
        f"<p>{esc(_bought(policy))}</p>"
        + table(TIER_HEAD, rows, {0, 2, 3, 4, 5, 6})
        + f'<p class="note">{esc(_tier_note(policy))}</p></section>'
    )


def guarantee_markdown(policy: Policy) -> list[str]:
    """The same as text: lines for the validity report's Markdown."""
    return [
        "",
        f"**Guarantee: {cell(_promise(policy).lower())}.**",
        "",
        f"Target agreement {policy.target_agreement:g}, risk {policy.risk:g}. "
        f"{cell(_sentence(policy.guarantee))}",
        "",
        f"Condition: {cell(_sentence(policy.condition))}",
        "",
        cell(_bought(policy)),
        "",
        md_table(
            TIER_HEAD,
            [[cell(c) for c in _tier_cells(t, ", ".join(_judges(t)))] for t in policy.tiers],
        ),
        "",
        _tier_note(policy),
    ]
