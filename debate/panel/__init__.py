"""The panel: judges score a transcript, and the decision rule turns scores into a verdict.

Judges read in counterbalanced orders; their scores become matrices; calibration, the
weighted vote and agreement decide a winner, or report an honest split with its reasons.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from debate._faces import lazy_names

if TYPE_CHECKING:
    from debate.panel._advice import band_advice, too_close_explanation, winner_explanation
    from debate.panel._cascade import (
        Escalation,
        EscalationRule,
        Tier,
        ask_every_tier,
        escalate_unless_winner,
        run_cascade,
        tiers_of,
        upto,
    )
    from debate.panel._conclude import Conclusion, conclude_batch
    from debate.panel._decision import (
        RESOLUTION,
        Context,
        Ruled,
        ScoreBatch,
        Setting,
        rule_batch,
        score_matrices,
    )
    from debate.panel._evidence import (
        MAX_WEIGHT,
        Confidence,
        confidence,
        doubt_features,
        evidence_weights,
        margin_evidence,
        verdict_evidence,
        weight_vector,
    )
    from debate.panel._identity import identity
    from debate.panel._orders import BA_AS_READ, ba_as_read
    from debate.panel._panel import MultiJudgePanel
    from debate.panel._positions import labelled_order
    from debate.panel._rules import effect_word
    from debate.panel._selective import PolicyRule, gate_note, rule
    from debate.panel._topics import TopicProfiles

_MODULES: dict[str, tuple[str, ...]] = {
    "debate.panel._advice": (
        "band_advice",
        "too_close_explanation",
        "winner_explanation",
    ),
    "debate.panel._cascade": (
        "Escalation",
        "EscalationRule",
        "Tier",
        "ask_every_tier",
        "escalate_unless_winner",
        "run_cascade",
        "tiers_of",
        "upto",
    ),
    "debate.panel._conclude": (
        "Conclusion",
        "conclude_batch",
    ),
    "debate.panel._decision": (
        "RESOLUTION",
        "Context",
        "Ruled",
        "ScoreBatch",
        "Setting",
        "rule_batch",
        "score_matrices",
    ),
    "debate.panel._evidence": (
        "MAX_WEIGHT",
        "Confidence",
        "confidence",
        "doubt_features",
        "evidence_weights",
        "margin_evidence",
        "verdict_evidence",
        "weight_vector",
    ),
    "debate.panel._identity": ("identity",),
    "debate.panel._orders": (
        "BA_AS_READ",
        "ba_as_read",
    ),
    "debate.panel._panel": ("MultiJudgePanel",),
    "debate.panel._positions": ("labelled_order",),
    "debate.panel._rules": ("effect_word",),
    "debate.panel._selective": (
        "PolicyRule",
        "gate_note",
        "rule",
    ),
    "debate.panel._topics": ("TopicProfiles",),
}
"""Where each name lives, imported on first use (PEP 562): a run's config names topic profiles
and builds its panel before the first model call without importing the decision's numpy."""

__getattr__, __dir__ = lazy_names(globals(), _MODULES)

__all__ = [
    "BA_AS_READ",
    "Conclusion",
    "Confidence",
    "Context",
    "Escalation",
    "EscalationRule",
    "MAX_WEIGHT",
    "MultiJudgePanel",
    "PolicyRule",
    "RESOLUTION",
    "Ruled",
    "ScoreBatch",
    "Setting",
    "Tier",
    "TopicProfiles",
    "ask_every_tier",
    "ba_as_read",
    "band_advice",
    "conclude_batch",
    "confidence",
    "doubt_features",
    "effect_word",
    "escalate_unless_winner",
    "evidence_weights",
    "gate_note",
    "identity",
    "labelled_order",
    "margin_evidence",
    "rule",
    "rule_batch",
    "run_cascade",
    "score_matrices",
    "tiers_of",
    "too_close_explanation",
    "upto",
    "verdict_evidence",
    "weight_vector",
    "winner_explanation",
]
