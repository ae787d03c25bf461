"""A large batch ruled in blocks, the next block's statistics computed meanwhile: the same
records as in one piece."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

from debate import _switching
from debate._switching import quick_switches
from debate.panel import Context, ScoreBatch, Setting, _ahead, rule_batch
from debate.panel._ahead import BLOCK_ITEMS, blocks, each_block
from debate.records import Thresholds


def _batch(items: int, seed: int) -> ScoreBatch:
    rng = np.random.default_rng(seed)
    judges, units = 5, 4
    is_pro = np.array([True, False] * (units // 2))
    shift = rng.normal(0.0, 2.0, size=(items, 1, 1)) * is_pro
    raw = np.clip(np.round(5.5 + rng.normal(0, 0.8, (items, judges, units)) + shift), 1, 10)
    raw[::9, :2] = raw[::9, 2:3]  # judges that agree exactly: the correlated-judges path
    return ScoreBatch(
        judges=[f"j{k}" for k in range(judges)],
        ids=[[f"u{i}-{b}" for i in range(units)] for b in range(items)],
        is_pro=is_pro,
        raw=raw,
        dimensions={"logic": np.clip(raw + rng.integers(-1, 2, raw.shape), 1, 10)},
        standings=rng.integers(0, 3, (items, units, judges)),
    )


@pytest.mark.parametrize("size", [0, 1, BLOCK_ITEMS, 2 * BLOCK_ITEMS - 1, 2 * BLOCK_ITEMS, 95_432])
def test_blocks_cover_every_item_once_none_under_the_floor(size: int) -> None:
    found = blocks(size)
    assert [i for block in found for i in range(block.start, block.stop)] == list(range(size))
    if size < 2 * BLOCK_ITEMS:
        assert found == [slice(0, size)]
    else:
        assert all(BLOCK_ITEMS <= block.stop - block.start < 2 * BLOCK_ITEMS for block in found)


def test_a_batch_ruled_in_blocks_is_ruled_as_in_one_piece(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 100 and more items (past every small-batch path), three of them: every
    record, ruling and lead as the whole batch's, and the statistics computed off the
    caller's thread."""
    batch = _batch(350, 3)
    weights = {j: 1.0 + k / 4 for k, j in enumerate(batch.judges)}
    setting = Setting(thresholds=Thresholds(), calibration="zscore", seed=5, topic_type="t")
    contexts = [Context(panel_size=5, unscored=b % 2, notes=[f"n{b}"]) for b in range(350)]
    whole = rule_batch(batch, weights, setting, contexts)
    monkeypatch.setattr(_ahead, "BLOCK_ITEMS", 100)
    threads: set[str] = set()
    compute = _ahead.each_block

    def watched(batch_, numbers, use):  # type: ignore[no-untyped-def]
        def noted(items):  # type: ignore[no-untyped-def]
            threads.add(threading.current_thread().name)
            return numbers(items)

        return compute(batch_, noted, use)

    monkeypatch.setattr("debate.panel._decision.each_block", watched)
    in_blocks = rule_batch(batch, weights, setting, contexts)
    assert len(blocks(350)) == 3
    assert [t.split("_")[0] for t in threads] == ["debate-ahead"]
    assert len(in_blocks) == len(whole) == 350
    outcomes = set()
    for got, expected in zip(in_blocks, whole, strict=True):
        assert got.agreement.model_dump_json() == expected.agreement.model_dump_json()
        assert got.diagnostics.model_dump_json() == expected.diagnostics.model_dump_json()
        assert repr(got.margins) == repr(expected.margins)
        assert got.ruling == expected.ruling and got.lead == expected.lead
        outcomes.add(got.ruling.outcome)
    assert len(outcomes) >= 2, outcomes


@pytest.mark.parametrize("side", ["compute", "use"])
def test_an_error_in_a_block_is_raised_and_the_rest_cancelled(
    monkeypatch: pytest.MonkeyPatch, side: str
) -> None:
    monkeypatch.setattr(_ahead, "BLOCK_ITEMS", 10)
    batch = _batch(60, 1)
    computed: list[int] = []
    used: list[int] = []

    def compute(items: ScoreBatch) -> int:
        computed.append(items.size)
        if side == "compute" and len(computed) == 2:
            raise ValueError("block 2")
        return items.size

    def use(block: slice, items: ScoreBatch, numbers: int) -> None:
        used.append(block.start)
        if side == "use" and block.start == 10:
            raise ValueError("block 2")

    with pytest.raises(ValueError, match="block 2"):
        each_block(batch, compute, use)
    assert used == [0, 10] if side == "use" else used == [0]
    assert len(computed) <= 6


def test_the_switch_interval_is_shortened_inside_and_restored_after() -> None:
    before = sys.getswitchinterval()
    with quick_switches():
        assert sys.getswitchinterval() == pytest.approx(_switching.QUICK_SWITCH_S, rel=0.05)
        with quick_switches(0.001):  # nested: the outer hold stays
            assert sys.getswitchinterval() == pytest.approx(_switching.QUICK_SWITCH_S, rel=0.05)
        assert sys.getswitchinterval() == pytest.approx(_switching.QUICK_SWITCH_S, rel=0.05)
    assert sys.getswitchinterval() == before


def test_a_shorter_interval_the_caller_set_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.0001)
    try:
        with quick_switches():
            assert sys.getswitchinterval() == pytest.approx(0.0001, rel=0.05)
        assert sys.getswitchinterval() == pytest.approx(0.0001, rel=0.05)
    finally:
        sys.setswitchinterval(before)
