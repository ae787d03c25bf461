"""The statistics' names that a config or a record needs when it is defined: no numpy here.

The records (a run's config, a policy, a validity report) name an aggregate, the rubric's
weights, a Platt calibration or a reliability bin as field types and defaults, so every
process that reads a config imports them; numpy (about 0.15 s of CPU) is imported only by
the statistics that compute, when one first runs. The modules that compute import these
names from here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from debate.stats._units import FloatArray

Aggregate = Literal["weighted_mean", "median", "trimmed_mean", "majority"]
Method = Literal["minmax", "zscore"]
Level = Literal["nominal", "ordinal", "interval", "ratio"]
LEVELS: tuple[Level, ...] = ("nominal", "ordinal", "interval", "ratio")
WEIGHT_TOLERANCE = 1e-6

RUBRIC_WEIGHTS: dict[str, float] = {
    "accuracy": 0.35,
    "relevance": 0.10,
    "completeness": 0.20,
    "conciseness": 0.15,
    "clarity": 0.20,
}
"""The council's default rubric weights (``CouncilSettings.weights`` starts from these)."""
RUBRIC_SCALE: tuple[float, float] = (1.0, 10.0)
"""The lowest and highest score a rubric dimension can take."""


def check_weights(
    weights: Mapping[str, float], names: Sequence[str] | None = None
) -> dict[str, float]:
    """Rubric weights checked once for every rubric (the panel's and the council's).

    Weights are finite, non-negative and sum to 1 within :data:`WEIGHT_TOLERANCE`; with
    ``names``, exactly those keys, returned in that order.

    Raises:
        ValueError: one line naming the offending keys or the sum, and the fix.
    """
    if names is not None:
        missing = [d for d in names if d not in weights]
        extra = [k for k in weights if k not in names]
        if missing or extra:
            raise ValueError(
                f"weights need exactly {', '.join(names)}"
                + (f"; missing {', '.join(missing)}" if missing else "")
                + (f"; unknown {', '.join(extra)}" if extra else "")
            )
    negative = [
        k
        for k, v in weights.items()
        if isinstance(v, bool) or not isinstance(v, int | float) or not v >= 0 or math.isinf(v)
    ]
    if negative:
        raise ValueError(f"weights must be non-negative numbers; fix {', '.join(negative)}")
    total = sum(weights.values())
    if abs(total - 1.0) > WEIGHT_TOLERANCE:
        raise ValueError(f"weights sum to {total:.6g}; make them sum to 1")
    return {d: float(weights[d]) for d in (weights if names is None else names)}


class StatsRecord(BaseModel):
    """A statistic's result: immutable, no unknown keys, no NaN or infinity.

    The records layer's ``Frozen`` sits above statistics, so statistics keep their own base.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class Bin(StatsRecord):
    """One bin of a reliability diagram."""

    low: float
    high: float
    n: int
    """Units whose confidence falls in the bin."""
    confidence: float | None
    """Mean confidence of those units; None for an empty bin."""
    accuracy: float | None
    """Share of them that were correct; None for an empty bin."""


class Platt(StatsRecord):
    """A monotone logistic calibration ``p = sigmoid(slope * score + intercept)``."""

    slope: float = Field(ge=0)
    """0 when the score carries no evidence (every unit then gets the same probability)."""
    intercept: float
    method: Literal["platt"] = "platt"
    """The calibration family, so a policy file names how its probabilities were made."""
    n: int = Field(ge=0)
    """Labelled units the fit used (units without a score are left out)."""
    doubt: list[float] = Field(default_factory=list)
    """Coefficients of the features given to :func:`platt_fit`, in their order (for a
    policy: :func:`debate.panel._evidence.doubt_features` of the tier's judges); empty: the
    score alone."""

    def predict(self, score: ArrayLike, features: ArrayLike | None = None) -> FloatArray:
        """The calibrated probability of each score (NaN stays NaN: no score, no probability).

        Args:
            score: One score or an array of them.
            features: Per score, the features the calibration was fitted with (a row for
                a scalar score, else one row per score); needed when ``doubt`` is not empty.

        Returns:
            An array of the score's shape (0-d for a scalar).

        Raises:
            ValueError: a score that is not a number, or features missing or of the wrong
                width.
        """
        import numpy as np

        from debate.stats._platt import _sigmoid
        from debate.stats._units import numbers

        x = numbers(score, "score")
        f = self.slope * x + self.intercept
        if not self.doubt:
            return _sigmoid(f)
        if features is None:
            raise ValueError(f"this calibration needs {len(self.doubt)} features per score")
        z = numbers(features, "features")
        if z.shape[-1:] != (len(self.doubt),):
            raise ValueError(f"features must have {len(self.doubt)} columns; got shape {z.shape}")
        return _sigmoid(f + z @ np.asarray(self.doubt))
