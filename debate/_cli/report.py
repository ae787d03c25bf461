"""``debate report RESULT.json [--out DIR]``: write the reports of a saved result."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from debate._cli.exits import EXIT_OK
from debate._cli.parsing import Commands, out_flag, subcommand
from debate.exceptions import ConfigurationError
from debate.report import write_report
from debate.storage import load_result

HELP = "write report.md and report.html for a result.json"
DESCRIPTION = "Write report.md and a self-contained report.html for a saved result."

logger = logging.getLogger(__name__)


def add_parser(commands: Commands) -> None:
    """Register ``debate report``."""
    parser = subcommand(commands, "report", report_command, HELP, DESCRIPTION)
    parser.add_argument("result", metavar="RESULT.json", help="OUT/result.json of a run")
    out_flag(parser, "where the reports go (default: the result's folder)")


def report_command(args: argparse.Namespace) -> int:
    """Write the reports and print their two paths.

    A missing or invalid result file, or an ``--out`` the reports cannot be written to, is
    bad input: one line, exit 2.
    """
    result = load_result(args.result)
    out = Path(args.out) if args.out else Path(args.result).parent
    try:
        paths = write_report(result, out)
    except OSError as exc:
        raise ConfigurationError(
            f"cannot write the reports to {out} ({exc.strerror or exc}); "
            "choose another folder with --out"
        ) from exc
    logger.info("wrote %s and %s", *paths)
    sys.stdout.write(f"{paths[0]}\n{paths[1]}\n")
    return EXIT_OK
