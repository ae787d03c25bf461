"""``debate leaderboard``'s flags, on a store a council run wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from debate._cli.main import main
from tests.cli.flags.harness import (
    Harness,
)


@pytest.fixture
def council_store(h: Harness) -> Path:
    store = h.tmp / "council-store.sqlite"
    # a fixed seed: for a few seeds the scripted placeholder writes no valid review
    argv = ["council", "Which database?", "--generate", "scripted-a,scripted-b", "--seed", "0"]
    run = h.run("council", "--store", str(store), "--category", "db", argv=argv, model=None)
    assert run.code == 0, run.err
    return store


def leaderboard(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["leaderboard", *argv])
    return code, capsys.readouterr().out


def test_leaderboard_store_reads_that_store(
    council_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert leaderboard(capsys) == (0, "no council results recorded yet\n")
    code, out = leaderboard(capsys, "--store", str(council_store))
    assert code == 0 and "scripted-a" in out and "scripted-b" in out


def test_leaderboard_since_drops_older_runs(
    council_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, recent = leaderboard(capsys, "--store", str(council_store), "--since", "1", "--json")
    _, none = leaderboard(capsys, "--store", str(council_store), "--since", "0", "--json")
    assert len(json.loads(recent)) == 2 and json.loads(none) == []


def test_leaderboard_category_filters(
    council_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, db = leaderboard(capsys, "--store", str(council_store), "--category", "db", "--json")
    _, other = leaderboard(capsys, "--store", str(council_store), "--category", "x", "--json")
    assert len(json.loads(db)) == 2 and json.loads(other) == []


def test_leaderboard_json_is_machine_readable(
    council_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, text = leaderboard(capsys, "--store", str(council_store))
    _, machine = leaderboard(capsys, "--store", str(council_store), "--json")
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    assert {r["model"] for r in json.loads(machine)} == {"scripted-a", "scripted-b"}
