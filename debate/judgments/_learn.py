"""What a fold learns from people's labels: judge weights, and how far the evidence is trusted.

Both are fitted on the training folds only (:mod:`debate.judgments._crossfit`) and reused
to choose a policy (:mod:`debate.judgments._policy`): weights earned as each judge's
log-odds against people, and a Platt calibration of the panel's ``|L|`` into ``p_agree``,
the probability that people's majority agrees with the panel's lead.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from debate.panel import Confidence, confidence, doubt_features, evidence_weights
from debate.records import NO_CALL
from debate.stats import Platt, platt_fit


def label_weights(
    evidence: NDArray[np.float64],
    judges: Sequence[str],
    label: NDArray[np.int8],
    train: NDArray[np.bool_],
) -> dict[str, float] | None:
    """Weights earned against people on the training units: each judge's log-odds, shrunk.

    See :func:`debate.panel._evidence.evidence_weights`: a judge at or below chance gets 0.
    None when no judge beats chance there (the caller falls back to equal weights).
    """
    truth = np.where(train, label, NO_CALL).astype(np.int8)
    weights = evidence_weights(evidence, truth, judges).weights
    return weights if any(w > 0 for w in weights.values()) else None


def agreed(lead: NDArray[np.int8], label: NDArray[np.int8]) -> NDArray[np.bool_]:
    """Whether people's majority agrees with the lead (a tie majority never does)."""
    same: NDArray[np.bool_] = (lead != NO_CALL) & (lead == label)
    return same


def calibrate_fold(
    evidence: NDArray[np.float64], weights: NDArray[np.float64], label: NDArray[np.int8]
) -> Platt:
    """Platt calibration of ``|L|`` and the judges' doubt on labelled units with a lead.

    The result's ``p_agree`` is :func:`predict_agree`'s: the probability people agree.
    """
    found = confidence(evidence, weights)
    usable = (label != NO_CALL) & (found.lead != NO_CALL)
    return platt_fit(
        np.abs(found.log_odds[usable]),
        agreed(found.lead, label)[usable],
        features=doubt_features(evidence[usable]),
    )


def predict_agree(
    platt: Platt, evidence: NDArray[np.float64], weights: NDArray[np.float64]
) -> tuple[Confidence, NDArray[np.float64]]:
    """Each unit's evidence and calibrated ``p_agree`` (NaN where there is no lead)."""
    found = confidence(evidence, weights)
    p = platt.predict(np.abs(found.log_odds), doubt_features(evidence))
    return found, np.where(found.lead != NO_CALL, p, np.nan)
