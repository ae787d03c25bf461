"""``debate leaderboard``: models ranked across the council questions in the run store."""

from __future__ import annotations

import argparse
import json
import sys

from debate._cli.exits import EXIT_OK
from debate._cli.parsing import Commands, json_flag, subcommand
from debate._cli.values import days
from debate.storage import RunStore

HELP = "models ranked across council questions"


def add_parser(commands: Commands) -> None:
    """Register ``debate leaderboard``."""
    board = subcommand(commands, "leaderboard", leaderboard_command, HELP)
    board.add_argument("--store", metavar="PATH", help="run store to read")
    board.add_argument("--since", type=days, metavar="DAYS", help="only the last DAYS days")
    board.add_argument("--category", help="only this category")
    json_flag(board, "machine-readable output")


def leaderboard_command(args: argparse.Namespace) -> int:
    """Print the cross-question leaderboard."""
    rows = RunStore(args.store).leaderboard(since_days=args.since, category=args.category)
    if args.json:
        sys.stdout.write(json.dumps([r.model_dump() for r in rows], indent=2) + "\n")
        return EXIT_OK
    if not rows:
        sys.stdout.write("no council results recorded yet\n")
        return EXIT_OK
    sys.stdout.write(
        f"{'model':<24} {'borda':>6} {'votes':>6} {'firsts':>6} {'runs':>5}  confidence\n"
    )
    for r in rows:
        sys.stdout.write(
            f"{r.model:<24} {r.mean_borda:6.3f} {r.total_votes:6d} {r.first_places:6d} "
            f"{r.appearances:5d}  {r.confidence}\n"
        )
    return EXIT_OK
