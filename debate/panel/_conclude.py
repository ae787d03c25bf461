"""A live panel's records of its items: a Vote and a Decision each, from the batch's parts.

:func:`~debate.panel._decision.rule_batch` decides every item of a batch; a live panel keeps
its vote and decision as records, while recorded tables keep only an item decision and skip
them (:mod:`debate.judgments._recorded`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from debate.panel._decision import Context, ScoreBatch, Setting, rule_batch
from debate.panel._rules import decision_of
from debate.records import Agreement, Decision, Diagnostics, Vote, built


class Conclusion(NamedTuple):
    """One item's agreement, vote, diagnostics and decision."""

    agreement: Agreement
    vote: Vote
    diagnostics: Diagnostics
    decision: Decision


_SHARED_VOTE = ("confidence", "topic_type", "topic_source", "calibration", "aggregate")
"""The vote's fields every item of a batch shares (besides the judge weights)."""


def _shared_vote(shared: Vote) -> dict[str, Any]:
    """The shared fields of a vote, a fresh copy of the judge weights for each item."""
    fields: dict[str, Any] = {name: getattr(shared, name) for name in _SHARED_VOTE}
    fields["judge_weights"] = dict(shared.judge_weights)
    return fields


def conclude_batch(
    batch: ScoreBatch,
    judge_weights: Mapping[str, float],
    setting: Setting,
    contexts: Sequence[Context],
) -> list[Conclusion]:
    """Agreement, vote, diagnostics and decision of every item of ``batch``.

    A live panel's view of the one decision path (:func:`rule_batch`), with a batch of one
    item; ``decide_scores`` calls :func:`rule_batch` itself and keeps only item decisions.
    Both intervals use the same seed, hence the same resampled judges and units: the
    interval in points is the calibrated one's counterpart, not another draw. The fields
    every vote shares are validated once (:func:`_vote_template`).
    """
    shared = _vote_template(dict(judge_weights), setting)
    out = []
    for item in rule_batch(batch, judge_weights, setting, contexts):
        vote_ = built(Vote, **item.margins._asdict(), **_shared_vote(shared))
        decision = decision_of(
            item.ruling, item.agreement, setting.thresholds, item.diagnostics, item.lead
        )
        out.append(Conclusion(item.agreement, vote_, item.diagnostics, decision))
    return out


def _vote_template(judge_weights: dict[str, float], setting: Setting) -> Vote:
    """The vote's fields every item of a batch shares, validated once for the batch."""
    return Vote(
        pro=None,
        con=None,
        margin=None,
        confidence=setting.thresholds.confidence,
        topic_type=setting.topic_type,
        topic_source=setting.topic_source,
        judge_weights=judge_weights,
        calibration=setting.calibration,
        aggregate=setting.thresholds.aggregate,
    )
