"""``debate run``'s own arguments."""

from __future__ import annotations

from tests.cli.flags.harness import (
    TOPIC,
    Harness,
    results,
)


def test_run_topic_is_debated(h: Harness) -> None:
    run = h.run("run", argv=["run", "Should we ship on Fridays?", "--arguments", "1"])
    assert run.code == 0, run.err
    assert results("run", run)[0].topic == "Should we ship on Fridays?"
    assert any("Should we ship on Fridays?" in r.user for r in run.records)


def test_run_arguments_sets_arguments_per_side(h: Harness) -> None:
    one = h.run("run", argv=["run", TOPIC, "--rounds", "0", "--arguments", "1"])
    two = h.run("run", argv=["run", TOPIC, "--rounds", "0", "--arguments", "2"])
    assert one.code == two.code == 0, two.err
    assert len(results("run", one)[0].transcript.arguments) == 2
    assert len(results("run", two)[0].transcript.arguments) == 4


def test_run_rounds_sets_cross_examination_rounds(h: Harness) -> None:
    none = h.run("run", argv=["run", TOPIC, "--arguments", "1", "--rounds", "0"])
    one = h.run("run", argv=["run", TOPIC, "--arguments", "1", "--rounds", "1"])
    assert none.code == one.code == 0, one.err
    assert results("run", none)[0].transcript.cross_examinations == []
    assert {c.round for c in results("run", one)[0].transcript.cross_examinations} == {1}
