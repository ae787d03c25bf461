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


def _item(batch: ScoreBatch, b: int) -> ScoreBatch:
    assert batch.standings is not None
    return ScoreBatch(
        judges=batch.judges,
        ids=[batch.ids[b]],
        is_pro=batch.is_pro,
        raw=batch.raw[b : b + 1],
        dimensions={d: m[b : b + 1] for d, m in batch.dimensions.items()},
        standings=batch.standings[b : b + 1],
    )


def test_a_live_item_alone_gets_the_numbers_it_gets_in_a_large_batch() -> None:
    """One item alone, as in a batch of 40: the same values, bit for bit.

    A single item stacks its score arrays into one call (alphas, side votes); a batch of 40
    takes each array on its own. Both are item by item. The intervals are not compared: a
    large batch's bootstrap counts draws.
    """
    batch = _batch(3)
    weights = {j: 1.0 + k / 4 for k, j in enumerate(batch.judges)}
    setting = Setting(thresholds=Thresholds(), calibration="minmax", seed=3, topic_type="t")
    parts = rule_batch(batch, weights, setting, [Context(panel_size=5)] * batch.size)
    shared = ("alpha", "alpha_raw", "alpha_by_dimension", "kappa", "argument_variance")
    for b, part in enumerate(parts):
        [alone] = rule_batch(_item(batch, b), weights, setting, [Context(panel_size=5)])
        for name in shared:
            assert getattr(alone.agreement, name) == getattr(part.agreement, name), name
        assert alone.diagnostics == part.diagnostics
        assert alone.margins[:3] == part.margins[:3]  # pro, con, margin
        assert alone.margins[4:7] == part.margins[4:7]  # the same in points


def test_records_round_each_array_as_alone() -> None:
    """Arrays rounded together for the records are each what rounding it alone gives."""
    from debate.panel._decision import STATISTIC_DECIMALS, _nums_each

    def alone(values: np.ndarray) -> object:
        out = (np.round(values, STATISTIC_DECIMALS) + 0.0).astype(object)
        out[~np.isfinite(values)] = None
        return out.tolist()

    rng = np.random.default_rng(0)
    arrays = [rng.normal(size=(3, 4)), np.array([np.nan, -0.0, 1e-12, 2.5]), rng.normal(size=2)]
    assert [repr(v) for v in _nums_each(*arrays)] == [repr(alone(a)) for a in arrays]
