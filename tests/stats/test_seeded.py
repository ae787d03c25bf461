"""Items with seeds of their own, resampled in one pass, get the intervals each gets alone.

A live panel's concurrent debates are decided together, each with its own seed
(``debate.panel._gather``). The effective votes' interval then draws per item: each
item's interval is held to the one its own seed gives it alone, with seeds repeated, out of
order and distinct, and the test fails when an item reads another seed's draws.
"""

from __future__ import annotations

import numpy as np
import pytest

from debate.stats import effective_votes_intervals

SEEDS = (7, 3, 7, 11, 0)
"""One seed twice, the others once, not sorted."""


@pytest.mark.parametrize("grouped", [False, True])
def test_each_item_gets_the_effective_votes_interval_of_its_own_seed(grouped: bool) -> None:
    rng = np.random.default_rng(2)
    shared = rng.normal(size=(len(SEEDS), 1, 10)) * 2  # judges that partly move together
    x = shared + rng.normal(size=(len(SEEDS), 4, 10)) * np.array([0.3, 0.8, 1.5, 3.0])[:, None]
    is_pro = np.array([True] * 5 + [False] * 5)
    groups = is_pro if grouped else None
    found = effective_votes_intervals(x, groups, ci=0.9, n_boot=300, seeds=SEEDS)
    for i, seed in enumerate(SEEDS):
        alone = effective_votes_intervals(x[i : i + 1], groups, ci=0.9, n_boot=300, seed=seed)
        assert found[i] == alone[0], (i, seed)
    same = effective_votes_intervals(np.repeat(x[:1], 3, 0), groups, n_boot=300, seeds=SEEDS[:3])
    assert same[0] == same[2]  # both seed 7
    assert same[0] != same[1]  # seeds 7 and 3: other draws, another interval


def test_one_seed_for_every_item_is_the_seed_itself() -> None:
    x = np.random.default_rng(3).normal(size=(3, 4, 6))
    assert effective_votes_intervals(x, seeds=(5, 5, 5)) == effective_votes_intervals(x, seed=5)


def test_seeds_must_be_one_per_item() -> None:
    x = np.random.default_rng(4).normal(size=(3, 4, 6))
    with pytest.raises(ValueError, match=r"seeds: give one per item \(3\), not 2"):
        effective_votes_intervals(x, seeds=(1, 2))
    assert effective_votes_intervals(x[:0], seeds=()) == []
