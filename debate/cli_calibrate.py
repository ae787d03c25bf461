"""``debate calibrate``: judges against known answers; updates their track records."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from debate.calibrate import calibrate_debates, calibrate_pairwise, read_debate_items
from debate.cli_common import EXIT_OK, EXIT_USAGE, model_flags, overrides
from debate.config import load_config
from debate.exceptions import ConfigurationError
from debate.store import default_store_path
from debate.track import TrackRecords
from debate.validity import format_report, load_items


def add_calibrate_parser(commands: Any) -> None:
    """Register the calibrate subcommand."""
    parser = commands.add_parser("calibrate", help="judges against items with a known answer")
    parser.add_argument("file", metavar="FILE")
    parser.add_argument(
        "--format", choices=["debate", "pairwise", "ukpconvarg", "pandalm"], default="pairwise"
    )
    parser.add_argument("--limit", type=int, metavar="N", help="first N items only")
    parser.add_argument("--concurrency", type=int, default=4, metavar="N")
    model_flags(parser)


def calibrate_main(args: argparse.Namespace) -> int:
    """Run the calibration, print the validity table, update track records."""
    try:
        config = load_config(args.config, overrides(args))
        records = TrackRecords(args.store or default_store_path())
        if args.format == "debate":
            items: Any = read_debate_items(args.file, args.limit)
        else:
            items = load_items(args.file, args.format, args.limit)
        if not items:
            raise ConfigurationError(f"{args.file}: no items")
    except ConfigurationError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_USAGE
    seed = args.seed if args.seed is not None else 0
    if args.format == "debate":
        report = asyncio.run(
            calibrate_debates(
                items, config=config, records=records, seed=seed, concurrency=args.concurrency
            )
        )
    else:
        report = asyncio.run(
            calibrate_pairwise(
                items,
                dataset=args.format,
                config=config,
                records=records,
                seed=seed,
                concurrency=args.concurrency,
            )
        )
    if args.json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    else:
        sys.stdout.write(format_report(report, f"{report.dataset}: {report.items} items") + "\n")
        accuracy = ", ".join(f"{k} {v:.3f}" for k, v in report.accuracy_after.items())
        sys.stdout.write(f"track-record accuracy now: {accuracy} (store {records.path})\n")
    return EXIT_OK
