"""``debate audit``: position, side, length and self-preference bias across stored runs.

Council runs get ADR-017's measure: reviewers' score against display position.
"""

from __future__ import annotations

import argparse
import json
import sys

from debate._cli.exits import EXIT_OK
from debate._cli.parsing import Commands, json_flag, subcommand

HELP = "position, first-side, length and self-preference bias; council positions"


def add_parser(commands: Commands) -> None:
    """Register ``debate audit``."""
    parser = subcommand(commands, "audit", audit_command, HELP)
    parser.add_argument("--store", metavar="PATH", help="run store to audit")
    json_flag(parser, "machine-readable output")


def audit_command(args: argparse.Namespace) -> int:
    """Print the bias audit of every run in the store."""
    from debate.quality import (
        audit,  # scipy: imported by this command alone
        format_audit,
    )
    from debate.storage import RunStore

    store = RunStore(args.store)
    result = audit(store)
    if args.json:
        sys.stdout.write(json.dumps(result.model_dump(), indent=2) + "\n")
    else:
        sys.stdout.write(f"store: {store.path} ({result.runs} debate runs)\n")
        sys.stdout.write(format_audit(result) + "\n")
    return EXIT_OK
