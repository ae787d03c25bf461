"""``debate calibrate``: judges against known answers; updates their track records."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

from debate._cli.common import EXIT_OK, EXIT_USAGE, model_flags, overrides
from debate.exceptions import ConfigurationError
from debate.quality._benchmark import calibrate_debates, calibrate_pairwise, read_debate_items
from debate.quality._track import TrackRecords
from debate.quality._validity import format_report, load_items
from debate.records._config import load_config
from debate.storage._cache import ResponseCache
from debate.storage._files import write_json_atomic
from debate.storage._runs import default_store_path


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
    """Run the calibration, print the validity table, update track records.

    The report goes to ``OUT/calibration.json``; every completed call to the response cache
    (``OUT/cache.sqlite`` unless ``--cache``/``--no-cache``), so an interrupted calibration
    re-run resumes. ``--no-store`` reports without touching the judges' track records.
    """
    out = Path(args.out)
    with tempfile.TemporaryDirectory() as scratch:
        try:
            config = load_config(args.config, overrides(args))
            store = Path(scratch) / "store.sqlite" if args.no_store else args.store
            records = TrackRecords(store or default_store_path())
            cache = None if args.no_cache else ResponseCache(args.cache or out / "cache.sqlite")
            if args.format == "debate":
                items: Any = read_debate_items(args.file, args.limit)
            else:
                items = load_items(args.file, args.format, args.limit)
            if not items:
                raise ConfigurationError(f"{args.file}: no items")
        except ConfigurationError as exc:
            sys.stderr.write(f"error: {exc}\n")
            return EXIT_USAGE
        common: dict[str, Any] = {
            "config": config,
            "records": records,
            "seed": args.seed if args.seed is not None else 0,
            "concurrency": args.concurrency,
            "cache": cache,
        }
        if args.format == "debate":
            report = asyncio.run(calibrate_debates(items, **common))
        else:
            report = asyncio.run(calibrate_pairwise(items, dataset=args.format, **common))
    path = write_json_atomic(out / "calibration.json", report.model_dump_json(indent=2) + "\n")
    if args.json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
        return EXIT_OK
    sys.stdout.write(format_report(report, f"{report.dataset}: {report.items} items") + "\n")
    accuracy = ", ".join(f"{k} {v:.3f}" for k, v in report.accuracy_after.items())
    where = "not stored: --no-store" if args.no_store else f"store {records.path}"
    sys.stdout.write(f"track-record accuracy now: {accuracy} ({where})\nReport: {path}\n")
    return EXIT_OK
