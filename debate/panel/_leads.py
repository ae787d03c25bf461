"""Each item's lead: the option the panel's evidence favours, its log-odds and ``p_agree``.

Read off a batch's raw scores (:mod:`debate.panel._evidence`), beside the decision rules:
every decision, live or recorded, carries the number a policy calibrates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from debate.panel._evidence import confidence, margin_evidence_array
from debate.records import NO_CALL, Side
from debate.stats import side_means

if TYPE_CHECKING:
    from debate.panel._decision import ScoreBatch

FloatArray = NDArray[np.float64]


def leads(batch: ScoreBatch, weights: FloatArray, per_judge: bool) -> list[dict[str, object]]:
    """Each item's lead, the panel's weighted log-odds and its uncalibrated ``p_agree``.

    A judge's evidence is its PRO - CON margin of mean raw scores (see
    :mod:`debate.panel._evidence`), so every decision, live or recorded, carries the number
    that a policy calibrates.
    """
    if not batch.judges:
        return [{} for _ in range(batch.size)]
    pro, con = side_means(batch.raw, batch.is_pro)
    x = margin_evidence_array(pro - con)
    if batch.spread is not None:  # each reading's evidence, averaged: split readings cancel
        x = batch.spread[0]
    odds = confidence(x, weights)
    sides: tuple[Side, Side] = ("PRO", "CON")
    found: list[dict[str, object]] = [
        {
            "lead": None if c == NO_CALL else sides[c],
            "evidence": L,
            "p_agree": None if c == NO_CALL else p,
        }
        for c, L, p in zip(
            odds.lead.tolist(), odds.log_odds.tolist(), odds.p_uncalibrated.tolist(), strict=True
        )
    ]
    if per_judge:  # each judge's own evidence, for a live panel's decision
        for lead, own in zip(found, np.round(x, 6).tolist(), strict=True):
            lead["judge_evidence"] = dict(zip(batch.judges, own, strict=True))
    return found
