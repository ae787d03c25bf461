"""The collector around decide's held block: restored, its survivors promoted unscanned."""

from __future__ import annotations

import gc

from debate._gc import collector_held


def test_survivors_go_to_the_oldest_generation_and_the_collector_runs_again() -> None:
    assert gc.isenabled()
    with collector_held():
        assert not gc.isenabled()
        made = [[i] for i in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert all(id(m) in oldest for m in made)


def test_a_freeze_made_elsewhere_is_left_as_it_is() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with collector_held():
            [[i] for i in range(10)]
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
