"""The batch's parts (what recorded tables keep) and a live panel's records say the same."""

from __future__ import annotations

import numpy as np
import pytest

from debate.panel import Context, ScoreBatch, Setting, conclude_batch, rule_batch
from debate.panel._rules import decide
from debate.records import Thresholds


def _batch(seed: int) -> ScoreBatch:
    rng = np.random.default_rng(seed)
    items, judges, units = 40, 5, 6
    is_pro = np.array([True, False] * (units // 2))
    shift = rng.normal(0.0, 2.0, size=(items, 1, 1)) * is_pro
    raw = np.clip(np.round(5.5 + rng.normal(0, 0.6, (items, judges, units)) + shift), 1, 10)
    return ScoreBatch(
        judges=[f"j{k}" for k in range(judges)],
        ids=[[f"u{i}" for i in range(units)]] * items,
        is_pro=is_pro,
        raw=raw,
        dimensions={"logic": np.clip(raw + rng.integers(-1, 2, raw.shape), 1, 10)},
        standings=rng.integers(0, 3, (items, units, judges)),
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rule_batch_parts_are_the_live_records(seed: int) -> None:
    batch = _batch(seed)
    weights = {j: 1.0 + k / 4 for k, j in enumerate(batch.judges)}
    setting = Setting(thresholds=Thresholds(), calibration="minmax", seed=seed, topic_type="t")
    contexts = [Context(panel_size=6, unscored=1, notes=["a note"])] * batch.size
    parts = rule_batch(batch, weights, setting, contexts)
    records = conclude_batch(batch, weights, setting, contexts)
    outcomes = set()
    for part, (agreement, vote_, diagnostics, decision) in zip(parts, records, strict=True):
        assert part.agreement == agreement and part.diagnostics == diagnostics
        assert part.margins._asdict() == vote_.model_dump(include=set(part.margins._fields))
        ruling = part.ruling
        assert (ruling.outcome, ruling.winner, ruling.reasons, ruling.high) == (
            decision.outcome,
            decision.winner,
            decision.reasons,
            decision.high_variance_arguments,
        )
        again = decide(
            agreement,
            vote_,
            setting.thresholds,
            [],
            6,
            diagnostics,
            notes=["a note"],
            extra=part.lead,
        )
        assert again == decision
        outcomes.add(decision.outcome)
    assert len(outcomes) >= 2, outcomes  # more than one rule was exercised
