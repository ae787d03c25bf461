"""How the judges read a debate: the reading flags, on the debate commands only."""

from __future__ import annotations

import pytest

from debate.records import DebateResult
from tests.cli.flags.harness import (
    DEBATE_COMMANDS,
    READING_FLAGS,
    READING_VALUES,
    Harness,
    debate_results,
)


@pytest.fixture
def topics_file(h: Harness) -> str:
    path = h.tmp / "topics.toml"
    path.write_text(
        "[default.weights]\ntechnical = 0.25\nbusiness = 0.25\nrisk = 0.25\ngeneral = 0.25\n"
        '[zebra]\nkeywords = ["plan", "microservices"]\n'
        "[zebra.weights]\ntechnical = 0.7\nbusiness = 0.1\nrisk = 0.1\ngeneral = 0.1\n"
    )
    return str(path)


@pytest.mark.parametrize("command", DEBATE_COMMANDS)
def test_topics_replaces_the_topic_profiles(
    command: str, h: Harness, topics_file: str, spied_debates: list[DebateResult]
) -> None:
    run = h.run(command, "--topics", topics_file)
    assert run.code == 0, run.err
    found = debate_results(command, run, spied_debates)
    assert found and {r.vote.topic_type for r in found} == {"zebra"}


@pytest.mark.parametrize("command", DEBATE_COMMANDS)
def test_topic_type_sets_the_type(
    command: str, h: Harness, spied_debates: list[DebateResult]
) -> None:
    run = h.run(command, "--topic-type", "security")
    assert run.code == 0, run.err
    found = debate_results(command, run, spied_debates)
    assert found and {(r.vote.topic_type, r.vote.topic_source) for r in found} == {
        ("security", "config")
    }


@pytest.mark.parametrize("command", DEBATE_COMMANDS)
def test_topic_classifier_model_asks_a_model(
    command: str, h: Harness, spied_debates: list[DebateResult]
) -> None:
    plain = h.run(command)
    spied_debates.clear()
    asked = h.run(command, "--topic-classifier", "model")
    assert plain.code == asked.code == 0, asked.err
    found = debate_results(command, asked, spied_debates)
    assert found and {r.vote.topic_source for r in found} == {"model"}
    assert len(asked.records) > len(plain.records)


@pytest.mark.parametrize("command", DEBATE_COMMANDS)
def test_presentation_fixed_shows_pro_first_to_every_judge(
    command: str, h: Harness, spied_debates: list[DebateResult]
) -> None:
    plain = h.run(command, "--seed", "3")
    balanced = debate_results(command, plain, spied_debates)
    spied_debates.clear()
    fixed_run = h.run(command, "--seed", "3", "--presentation", "fixed")
    fixed = debate_results(command, fixed_run, spied_debates)
    assert plain.code == fixed_run.code == 0, fixed_run.err
    firsts = {e.positions["PRO-1"] for r in balanced for e in r.evaluations}
    assert firsts == {0, 1}  # counterbalanced: some judges read CON first
    assert {e.positions["PRO-1"] for r in fixed for e in r.evaluations} == {0}


@pytest.mark.parametrize("command", DEBATE_COMMANDS)
def test_swap_makes_every_judge_read_twice(
    command: str, h: Harness, spied_debates: list[DebateResult]
) -> None:
    plain = h.run(command)
    spied_debates.clear()
    swapped = h.run(command, "--swap")
    assert plain.code == swapped.code == 0, swapped.err
    assert len(swapped.judge_requests) == 2 * len(plain.judge_requests)
    found = debate_results(command, swapped, spied_debates)
    assert found and all(e.swap is not None for r in found for e in r.evaluations)


@pytest.mark.parametrize("command", DEBATE_COMMANDS)
def test_samples_makes_every_judge_read_k_times(
    command: str, h: Harness, spied_debates: list[DebateResult]
) -> None:
    plain = h.run(command)
    spied_debates.clear()
    sampled = h.run(command, "--samples", "3")
    assert plain.code == sampled.code == 0, sampled.err
    assert len(sampled.judge_requests) == 3 * len(plain.judge_requests)
    found = debate_results(command, sampled, spied_debates)
    assert found and all(
        e.readings is not None and len(e.readings) == 3 for r in found for e in r.evaluations
    )


@pytest.mark.parametrize("command", DEBATE_COMMANDS)
def test_aggregate_chooses_how_the_judges_margins_combine(
    command: str, h: Harness, spied_debates: list[DebateResult]
) -> None:
    plain = h.run(command, "--seed", "3")
    found = debate_results(command, plain, spied_debates)
    spied_debates.clear()
    median_run = h.run(command, "--seed", "3", "--aggregate", "median")
    median = debate_results(command, median_run, spied_debates)
    assert plain.code == median_run.code == 0, median_run.err
    assert found and {r.vote.aggregate for r in found} == {"weighted_mean"}
    assert median and {r.vote.aggregate for r in median} == {"median"}
    assert {r.decision.thresholds.aggregate for r in median} == {"median"}
    bad = h.run(command, "--aggregate", "mode")
    assert bad.code == 2 and "--aggregate" in bad.err


@pytest.mark.parametrize("command", DEBATE_COMMANDS)
def test_min_judges_sets_the_fewest_scored_judges(
    command: str, h: Harness, spied_debates: list[DebateResult]
) -> None:
    run = h.run(command, "--seed", "3", "--min-judges", "4")
    found = debate_results(command, run, spied_debates)
    assert run.code == 0, run.err
    assert found and {r.decision.thresholds.min_judges for r in found} == {4}
    too_many = h.run(command, "--min-judges", "9")
    assert too_many.code == 2 and too_many.err.startswith("error: --min-judges: 9 is more than")
    assert "\n" not in too_many.err.strip()
    too_few = h.run(command, "--min-judges", "1")
    assert too_few.code == 2 and too_few.err.startswith("error: --min-judges:")


@pytest.mark.parametrize("flag", READING_FLAGS)
def test_council_refuses_the_debate_reading_flags(flag: str, h: Harness) -> None:
    run = h.run("council", flag, *READING_VALUES.get(flag, []))
    assert run.code == 2 and "unrecognized arguments" in run.err and run.records == []


@pytest.mark.parametrize("flag", READING_FLAGS)
def test_pairwise_calibration_refuses_the_debate_reading_flags(
    flag: str, h: Harness, topics_file: str
) -> None:
    value = [topics_file] if flag == "--topics" else READING_VALUES.get(flag, [])
    argv = ["calibrate", str(h.pairs), "--format", "pairwise"]
    run = h.run("calibrate", flag, *value, argv=argv)
    assert run.code == 2 and run.err.startswith(f"error: {flag}:") and run.records == []
