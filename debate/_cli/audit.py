"""``debate audit``: position, length and self-preference bias across the stored runs."""

from __future__ import annotations

import argparse
import json
import sys

from debate._cli.common import EXIT_OK, Commands
from debate.quality._audit import audit, format_audit
from debate.storage._runs import RunStore


def add_parser(commands: Commands) -> None:
    """Register ``debate audit``."""
    parser = commands.add_parser("audit", help="position, length and self-preference bias")
    parser.add_argument("--store", metavar="PATH", help="run store to audit")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=audit_command)


def audit_command(args: argparse.Namespace) -> int:
    """Print the bias audit of every run in the store."""
    store = RunStore(args.store)
    rows = audit(store)
    if args.json:
        sys.stdout.write(json.dumps([r.model_dump() for r in rows], indent=2) + "\n")
    else:
        sys.stdout.write(f"store: {store.path} ({store.count_runs()} runs)\n")
        sys.stdout.write(format_audit(rows) + "\n")
    return EXIT_OK
