"""``debate council``'s own flags."""

from __future__ import annotations

import json

import pytest

from debate._cli.main import main
from tests.cli.flags.harness import (
    Harness,
    is_review,
)


def test_council_question_and_candidates_reach_the_reviewers(h: Harness) -> None:
    run = h.run("council")
    assert run.code == 0, run.err
    result = run.file("result.json")
    assert {c["id"] for c in result["candidates"]} == {"x", "y"}
    asked = [r.body["messages"][1]["content"] for r in run.records]  # after it, any re-ask
    assert all("Which database?" in a and "Use SQLite." in a for a in asked)


def test_council_generate_asks_each_model_to_answer(h: Harness) -> None:
    argv = ["council", "Which database?", "--generate", "gen-a,gen-b"]
    run = h.run("council", argv=argv)
    assert run.code == 0, run.err
    answers = [r for r in run.records if not is_review(r.body)]
    assert sorted(r.body["model"] for r in answers) == ["gen-a", "gen-b"]
    assert {c["id"] for c in run.file("result.json")["candidates"]} == {"gen-a", "gen-b"}


def test_council_method_chooses_the_primary_ranking(h: Harness) -> None:
    plain, borda = h.run("council"), h.run("council", "--method", "borda")
    assert plain.file("result.json")["method"] == "normalized"
    assert borda.file("result.json")["method"] == "borda"


def test_council_safety_gate_asks_reviewers_about_safety(h: Harness) -> None:
    plain, gated = h.run("council"), h.run("council", "--safety-gate")
    assert plain.code == gated.code == 0, gated.err
    assert not any('"unsafe"' in json.dumps(r.body["response_format"]) for r in plain.records)
    assert all('"unsafe"' in json.dumps(r.body["response_format"]) for r in gated.records)


def test_council_category_is_recorded_for_the_leaderboard(
    h: Harness, capsys: pytest.CaptureFixture[str]
) -> None:
    # a fixed seed: for a few seeds the scripted placeholder writes no valid review
    argv = ["council", "Which database?", "--generate", "scripted-a,scripted-b", "--seed", "0"]
    run = h.run("council", "--category", "databases", argv=argv, model=None)
    assert run.code == 0, run.err
    assert main(["leaderboard", "--category", "databases", "--json"]) == 0
    assert {r["model"] for r in json.loads(capsys.readouterr().out)} == {
        "scripted-a",
        "scripted-b",
    }
    assert main(["leaderboard", "--category", "other", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
