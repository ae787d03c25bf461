"""``debate audit``'s flags, on a store a judge run wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from debate._cli.main import main
from tests.cli.flags.harness import (
    Harness,
)


@pytest.fixture
def debate_store(h: Harness) -> Path:
    store = h.tmp / "debate-store.sqlite"
    assert h.run("judge", "--store", str(store)).code == 0
    return store


def test_audit_store_reads_that_store(
    debate_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit"]) == 0
    assert "(0 debate runs)" in capsys.readouterr().out
    assert main(["audit", "--store", str(debate_store)]) == 0
    assert f"store: {debate_store} (1 debate runs)" in capsys.readouterr().out


def test_audit_json_is_machine_readable(
    debate_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", "--store", str(debate_store), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"] == 1
