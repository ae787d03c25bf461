"""The top-level ``debate --version``, and the inventory: every flag of every subcommand is in
docs/flags.md."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from debate._cli.main import main
from tests.support import ROOT


def test_version_prints_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    from debate._version import __version__

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"debate {__version__}"


# --- the inventory: every flag of every subcommand is in docs/flags.md -------------------


def flag_inventory() -> Iterator[tuple[str, str]]:
    import argparse

    from debate._cli.main import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in commands.choices.items():
        for action in sub._actions:
            if action.option_strings and action.dest != "help":
                yield name, action.option_strings[-1]


def test_every_flag_is_in_the_inventory() -> None:
    table = (ROOT / "docs" / "flags.md").read_text()
    rows = {
        (cells[1].strip(), cells[2].strip().strip("`"))
        for line in table.splitlines()
        if line.startswith("| ") and len(cells := line.split("|")) > 3
    }
    flags = set(flag_inventory())
    missing = [pair for pair in flags if pair not in rows]
    assert missing == []
    removed = {
        (cells[1].strip(), cells[2].strip().strip("`"))
        for line in table.splitlines()
        if line.startswith("| ") and "removed" in line and len(cells := line.split("|")) > 3
    }
    stale = [
        (command, flag)
        for command, flag in rows - removed
        if flag.startswith("--") and command != "debate" and (command, flag) not in flags
    ]
    assert stale == []  # a row for a flag the command does not have
