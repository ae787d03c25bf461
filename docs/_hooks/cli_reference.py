"""The CLI reference, generated from the ``debate`` command's own argparse parser.

Generated rather than written so that it cannot disagree with ``debate --help``: every
subcommand, its usage line, and each flag in its argparse group with its arguments, choices,
default and help text. The hand-written part is docs/flags.md, one row per flag naming the
test that shows the flag has an effect and a note where one adds something; its rows are
joined in here by (command, flag), so the site has one reference. The mkdocs hook
(docs/_hooks/site.py) builds this page on every build; ``python docs/_hooks/cli_reference.py``
prints it.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

FLAGS_TABLE = Path(__file__).resolve().parents[1] / "flags.md"
"""The hand-written table: command, flag, the test that shows its effect, a note."""

USAGE_WIDTH = "80"
"""Terminal width the usage lines are wrapped at, so the page does not depend on the shell."""


def flag_notes(table: str) -> dict[tuple[str, str], tuple[str, str]]:
    """(command, flag) -> (test, note) from docs/flags.md's table rows.

    Read the way tests/cli/flags/test_debate_flags.py reads them: a row starts with ``| `` and
    its cells are command, flag in backticks, test, note.
    """
    notes: dict[tuple[str, str], tuple[str, str]] = {}
    for line in table.splitlines():
        cells = line.split("|")
        if not line.startswith("| ") or len(cells) < 5:
            continue
        command, flag = cells[1].strip(), cells[2].strip().strip("`")
        if command in ("command", "---"):
            continue
        notes[(command, flag)] = (cells[3].strip(), cells[4].strip())
    return notes


@contextmanager
def _columns(width: str) -> Iterator[None]:
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = width
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def _cell(text: str) -> str:
    """Text for a Markdown table cell: one line, pipes and angle brackets escaped."""
    text = " ".join(text.split())
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _tests(cell: str) -> str:
    """The flags table's test cell, each test as code (it may hold several, and prose)."""
    parts = re.split(r"(?:<br>|, )", cell)
    return "<br>".join(
        f'<span class="test-id">`{part.strip()}`</span>'
        if part.strip().startswith("tests/")
        else _cell(part)
        for part in parts
        if part.strip()
    )


def _name(action: argparse.Action) -> str:
    if not action.option_strings:
        return str(action.metavar or action.dest)
    return action.option_strings[-1]


def _takes(action: argparse.Action) -> str:
    """What the flag takes: its choices, its metavar, or nothing for a switch."""
    if action.nargs == 0:
        return ""
    if action.choices is not None:
        return " \\| ".join(f"`{choice}`" for choice in action.choices)
    metavar = action.metavar or action.dest.upper()
    return f"`{_cell(metavar if isinstance(metavar, str) else ' '.join(metavar))}`"


def _default(action: argparse.Action) -> str:
    if action.nargs == 0 or action.default in (None, argparse.SUPPRESS, False):
        return ""
    if isinstance(action.default, (frozenset, set, list, tuple, dict)) and not action.default:
        return ""
    return f"`{_cell(str(action.default))}`"


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    formatter = parser._get_formatter()
    return _cell(formatter._expand_help(action)) if action.help else ""


def _group_rows(
    command: str,
    parser: argparse.ArgumentParser,
    actions: list[argparse.Action],
    notes: dict[tuple[str, str], tuple[str, str]],
) -> Iterator[str]:
    yield "| flag | takes | default | what it does | test that shows its effect |"
    yield "|---|---|---|---|---|"
    for action in actions:
        name = _name(action)
        test, note = notes.get((command, name), ("", ""))
        aliases = ", ".join(f"`{flag}`" for flag in action.option_strings[:-1])
        said = _help(parser, action)
        if aliases:
            said = f"{said} (also {aliases})".strip()
        if note:
            said = f"{said}<br>*{_cell(note)}*" if said else f"*{_cell(note)}*"
        yield f"| `{name}` | {_takes(action)} | {_default(action)} | {said} | {_tests(test)} |"


def _visible(group: argparse._ArgumentGroup) -> list[argparse.Action]:
    return [
        action
        for action in group._group_actions
        if action.help != argparse.SUPPRESS and action.dest != "help"
    ]


def command_section(
    command: str,
    summary: str,
    parser: argparse.ArgumentParser,
    notes: dict[tuple[str, str], tuple[str, str]],
) -> Iterator[str]:
    """The Markdown of one subcommand: summary, usage, then each argparse group's flags."""
    yield f"## debate {command}"
    yield ""
    yield _cell(summary[:1].upper() + summary[1:]) + "."
    yield ""
    if parser.description:
        yield _cell(parser.description)
        yield ""
    yield "```text"
    yield parser.format_usage().strip()
    yield "```"
    yield ""
    for group in parser._action_groups:
        actions = _visible(group)
        if not actions:
            continue
        yield f"**{group.title}**"
        yield ""
        yield from _group_rows(command, parser, actions, notes)
        yield ""
    removed = sorted(
        flag for (cmd, flag), (test, _) in notes.items() if cmd == command and "removed" in test
    )
    if removed:
        flags = ", ".join(f"`{flag}`" for flag in removed)
        yield f"Refused (removed, argparse rejects them rather than ignore them): {flags}."
        yield ""


def cli_reference() -> str:
    """The whole CLI reference page as Markdown."""
    from debate._cli.main import build_parser

    notes = flag_notes(FLAGS_TABLE.read_text(encoding="utf-8"))
    with _columns(USAGE_WIDTH):
        parser = build_parser()
        commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        summaries = {choice.dest: choice.help or "" for choice in commands._choices_actions}
        lines = [
            "# CLI reference",
            "",
            "Generated from the `debate` command's parser on every build of this site, so it",
            "says what `debate COMMAND --help` says. Each flag names the test that runs the",
            "command with and without it and asserts on what differs (the hand-written table",
            "behind that column is [docs/flags.md](../flags.md); "
            "`tests/cli/flags/test_debate_flags.py::test_every_flag_is_in_the_inventory` fails",
            "when a flag has no row there). Exit codes and `--json` failures: "
            "[For integrations](../guides/integrations.md).",
            "",
            "```text",
            parser.format_usage().strip(),
            "```",
            "",
            "| command | what it does |",
            "|---|---|",
            *(
                f"| [`{name}`](#debate-{name}) | {_cell(help)} |"
                for name, help in summaries.items()
            ),
            "",
        ]
        for name, sub in commands.choices.items():
            lines.extend(command_section(name, summaries.get(name, ""), sub, notes))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(cli_reference())
