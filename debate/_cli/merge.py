"""``debate merge``: the output folders of a sharded batch, as one batch's output."""

from __future__ import annotations

import argparse
from pathlib import Path

from debate._cli.batch import summarise
from debate._cli.parsing import Commands, json_flag, out_flag, subcommand
from debate.batch import merge_shards

HELP = "merge the --out folders of a batch run with --shard K/N on N machines"


def add_parser(commands: Commands) -> None:
    """Register ``debate merge``."""
    merge = subcommand(commands, "merge", merge_command, HELP)
    merge.add_argument("folders", nargs="+", metavar="OUT", help="every shard's --out folder")
    out_flag(merge, "new folder for the merged results", required=True)
    json_flag(merge, "print the summary as JSON")


def merge_command(args: argparse.Namespace) -> int:
    """Write one results.jsonl and summary; exit 1 if an item failed, as ``debate batch``.

    A separate command rather than a flag of ``debate batch``: it calls no model, so none of
    batch's model, cost or panel flags would mean anything here.
    """
    out = Path(args.out)
    lines = merge_shards([Path(folder) for folder in args.folders], out)
    return summarise(args, lines, out)
