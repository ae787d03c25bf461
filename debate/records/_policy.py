"""The policy file: which verdicts to declare, and the guarantee that comes with them.

``debate validity --target-agreement T --risk R`` chooses, on labelled units, a confidence
threshold per tier of judges (:func:`debate.stats.cascade_thresholds`) and writes a
:class:`Policy`; ``debate decide --policy`` and ``debate run --policy`` apply it. The file
states the guarantee in words together with the condition it rests on, so whoever reads a
verdict made under it can tell what was promised.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import Field, model_validator

from debate._checks import repeated
from debate.records._judgments import TableKind
from debate.records._transcript import Frozen
from debate.stats import Platt

POLICY_FORMAT: Literal["debate-policy/1"] = "debate-policy/1"
DEFAULT_CONDITION = (
    "new items are exchangeable with the calibration items: drawn from the same population "
    "of questions, answers and judges, and judged by the same judges and prompts"
)
Share = Annotated[float, Field(ge=0, le=1)]
"""A proportion: a coverage, an agreement, a threshold on a probability."""
COVERAGE_TOLERANCE = 1e-9
"""Slack for the float sum of the tiers' coverages against the policy's."""


def guarantee_sentence(calibration_items: int, target: float, risk: float) -> str:
    """The guarantee a policy states, in the one wording every policy uses."""
    return (
        f"on new items exchangeable with the {calibration_items} calibration items, agreement "
        f"with people's majority on the verdicts this policy declares is at least {target:g} "
        f"with probability at least {1 - risk:g}"
    )


class TierPolicy(Frozen):
    """One tier of the cascade: the judges it counts and when it declares."""

    tier: int = Field(ge=1)
    """1 is the cheapest; an item is passed to tier ``k + 1`` when tier ``k`` does not declare."""
    judges: list[str] = Field(min_length=1)
    """The judges counted at this tier: every judge of this tier and the tiers below."""
    weights: dict[str, float]
    """The evidence weight of each of ``judges`` (finite, 0 or more; 0: counted as absent)."""
    calibrator: Platt | None
    """Maps the panel's raw confidence to ``p_agree``; None: uncalibrated, which a tier that
    declares never is (its threshold would be on a score, not a probability)."""
    threshold: Share | None
    """Declare when ``p_agree >= threshold``; None: this tier declares nothing."""
    declared: int = Field(ge=0)
    """Calibration units this tier declared."""
    design_effect: float = Field(default=1.0, ge=1)
    """How much more the declared units' errors varied than independent units' would (units
    of one item moving together); the test counted them as this many times fewer."""
    coverage: Share
    """``declared`` as a share of all the policy's labelled units."""
    agreement: Share | None
    """Agreement with people's majority on the units this tier declared; None if none."""
    labelled: int = Field(ge=0)
    """Calibration units that reached this tier (all of them at tier 1)."""

    @model_validator(mode="after")
    def _consistent(self) -> TierPolicy:
        twice = repeated(self.judges)
        if twice:
            raise ValueError(f"judges lists {', '.join(twice)} more than once; list each once")
        if set(self.weights) != set(self.judges):
            raise ValueError(
                f"weights must give one weight per judge ({', '.join(sorted(self.judges))}); "
                f"got {', '.join(sorted(self.weights)) or 'none'}"
            )
        bad = sorted(j for j, w in self.weights.items() if not 0 <= w < math.inf)
        if bad:
            raise ValueError(f"weights must be finite, 0 or more; {', '.join(bad)} is not")
        if self.declared > self.labelled:
            raise ValueError(
                f"declared ({self.declared}) cannot exceed labelled ({self.labelled}): a tier "
                "declares only units that reached it"
            )
        if self.threshold is None and (self.declared or self.agreement is not None):
            raise ValueError("a tier without a threshold declares nothing: declared must be 0")
        if self.threshold is not None and self.calibrator is None:
            raise ValueError(
                "a tier with a threshold needs its calibrator: a threshold on an uncalibrated "
                "score carries no guarantee"
            )
        if (self.agreement is None) != (self.declared == 0):
            raise ValueError("agreement is given exactly when the tier declared some units")
        return self


class Policy(Frozen):
    """When to declare a verdict, chosen on labelled units with a stated guarantee."""

    format: Literal["debate-policy/1"] = POLICY_FORMAT
    """The file's format and version, checked before anything else is read."""
    kind: TableKind
    """``verdicts`` (pairwise calls) or ``scores`` (graded options)."""
    dimension: str | None = None
    """The score table's dimension the policy was calibrated on; None for verdicts."""
    target_agreement: float = Field(gt=0.5, lt=1)
    risk: float = Field(gt=0, le=0.5)
    """The whole cascade's risk (each tier was tested at ``risk / len(tiers)``)."""
    tiers: list[TierPolicy] = Field(min_length=1)
    labelled_units: int = Field(ge=1)
    """Calibration units with a people's majority."""
    calibration_items: int = Field(ge=1)
    """Items those units came from (the guarantee's ``N``)."""
    coverage: Share
    """Share of the labelled units some tier declared."""
    agreement: Share | None
    """Agreement with people's majority on every declared unit; None if none."""
    guarantee: str = Field(min_length=1)
    """The promise in one sentence (see :func:`guarantee_sentence`)."""
    condition: str = Field(min_length=1)
    """What the promise rests on (see :data:`DEFAULT_CONDITION`)."""
    source: str
    """The judgments table and labels the policy was calibrated on."""
    seed: int
    folds: int = Field(ge=1)
    """Cross-fitting folds of the weights and calibrators."""

    @model_validator(mode="after")
    def _consistent(self) -> Policy:
        numbers = [t.tier for t in self.tiers]
        if numbers != list(range(1, len(numbers) + 1)):
            raise ValueError(f"tiers must be numbered 1, 2, ... in order; got {numbers}")
        if self.kind == "verdicts" and self.dimension is not None:
            raise ValueError("dimension is for score tables; a verdicts policy has none")
        if self.calibration_items > self.labelled_units:
            raise ValueError("calibration_items cannot exceed labelled_units (one unit an item)")
        waiting = self.labelled_units
        for index, tier in enumerate(self.tiers):
            where = f"tiers.{index}"
            if index and not set(self.tiers[index - 1].judges) <= set(tier.judges):
                raise ValueError(f"{where}.judges must include every judge of the tiers below")
            if tier.labelled != waiting:
                raise ValueError(
                    f"{where}.labelled is {tier.labelled}, but {waiting} units reach that tier "
                    "(the labelled units no tier below declared)"
                )
            if abs(tier.declared / self.labelled_units - tier.coverage) > COVERAGE_TOLERANCE:
                raise ValueError(
                    f"{where}.coverage is {tier.coverage:g}, but the tier declares "
                    f"{tier.declared} of {self.labelled_units} labelled units"
                )
            waiting -= tier.declared
        declared = self.labelled_units - waiting
        if abs(declared / self.labelled_units - self.coverage) > COVERAGE_TOLERANCE:
            raise ValueError(
                f"coverage is {self.coverage:g}, but the tiers declare {declared} of "
                f"{self.labelled_units} labelled units"
            )
        if (self.agreement is None) != (declared == 0):
            raise ValueError("agreement is given exactly when some tier declared units")
        return self
