"""The parser every subcommand is built on, and how a command module registers one.

A command module states what ``--help`` says of it (its ``HELP`` and ``DESCRIPTION``) and its
``add_parser`` registers it with :func:`subcommand`, which also binds the function that runs
it; the flags several commands share (``--out``, counts, ``--bootstrap``) are added here
once, so their wording and checks are the same everywhere.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, TypeAlias

from debate._cli.exits import EXIT_USAGE
from debate._cli.values import at_least, path_text

Command = Callable[[argparse.Namespace], int]
"""What a subcommand registers with ``set_defaults(func=...)``: parsed flags in, exit code out.

A command raises instead of printing its own errors; :func:`debate._cli.main.dispatch`
turns every failure into one line and an exit code.
"""

Commands: TypeAlias = "argparse._SubParsersAction[Parser]"
"""The subparsers action each command module registers its parser with."""


class UsageExit(SystemExit):
    """argparse refused the command line; ``message`` is its one-line reason."""

    def __init__(self, message: str) -> None:
        super().__init__(EXIT_USAGE)
        self.message = message


class Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in one line with exit code 2."""

    def error(self, message: str) -> Any:
        """Exit 2 with a one-line message (``--json`` callers also get it on stdout)."""
        line = f"{message} (see {self.prog} --help)"
        sys.stderr.write(f"error: {line}\n")
        raise UsageExit(line)


MAX_BOOTSTRAP = 100_000
"""Replicates beyond this narrow no interval visibly and take minutes; a typo (an extra
three zeros) should be refused, not run for hours."""


def subcommand(
    commands: Commands, name: str, func: Command, help: str, description: str | None = None
) -> Parser:
    """Register ``debate NAME``, run by ``func``; the command module adds its flags to it."""
    parser = commands.add_parser(name, help=help, description=description)
    parser.set_defaults(func=func)
    return parser


def out_flag(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    help: str,
    *,
    metavar: str = "DIR",
    **given: Any,
) -> None:
    """``--out``: where a command writes; an empty path is refused (:func:`path_text`)."""
    parser.add_argument("--out", type=path_text, metavar=metavar, help=help, **given)


def json_flag(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, help: str | None = None
) -> None:
    """``--json``: the output as JSON on stdout, and a failure too (:mod:`debate._cli.main`).

    The funnel reads ``args.json`` to print a failure as ``{"error": ...}``, so every command
    names the flag (and its field) the same way.
    """
    parser.add_argument("--json", action="store_true", help=help)


def count_flag(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    flag: str,
    low: int,
    high: int | None,
    *,
    help: str | None = None,
    metavar: str | None = "N",
    **given: Any,
) -> None:
    """A whole-number flag from ``low`` to ``high``: a count, a port (:func:`at_least`)."""
    parser.add_argument(flag, type=at_least(low, high), metavar=metavar, help=help, **given)


def bootstrap_flag(parser: argparse.ArgumentParser, low: int, help: str) -> None:
    """``--bootstrap N``: replicates of every interval, ``low`` to :data:`MAX_BOOTSTRAP`."""
    count_flag(parser, "--bootstrap", low, MAX_BOOTSTRAP, default=1000, help=help)
