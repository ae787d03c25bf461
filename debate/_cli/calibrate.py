"""``debate calibrate``: judges against known answers; updates their track records."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from debate._cli.config import CONFIG_FLAGS, run_config
from debate._cli.costs import cost_and_limits
from debate._cli.exits import EXIT_OK
from debate._cli.files import user_file
from debate._cli.flags import model_flags
from debate._cli.outputs import open_cache, open_store, out_folder, store_path
from debate._cli.parsing import Commands, count_flag, subcommand
from debate._cli.progress import progress
from debate._cli.summaries import budget_lines
from debate.exceptions import ConfigurationError
from debate.records import MAX_CONCURRENCY
from debate.runtime import Run

if TYPE_CHECKING:
    from debate.quality import CalibrationReport


HELP = "judges against items with a known answer"


def add_parser(commands: Commands) -> None:
    """Register ``debate calibrate``."""
    parser = subcommand(commands, "calibrate", calibrate_command, HELP)
    parser.add_argument("file", metavar="FILE")
    parser.add_argument(
        "--format", choices=["debate", "pairwise", "ukpconvarg", "pandalm"], default="pairwise"
    )
    count_flag(parser, "--limit", 1, None, help="first N items only")
    count_flag(parser, "--concurrency", 1, MAX_CONCURRENCY, default=4)
    model_flags(parser)


def calibrate_command(args: argparse.Namespace) -> int:
    """Run the calibration, print the validity table, update track records.

    The report goes to ``OUT/calibration.json``, every judge's scores and the known answers
    to ``OUT/judgments.csv`` and ``OUT/labels.csv`` (the tidy tables ``debate validity``
    reads, so the run can be validated later); every completed call to the response cache
    (``OUT/cache.sqlite`` unless ``--cache``/``--no-cache``), so an interrupted calibration
    re-run resumes. ``--no-store`` reports without touching the judges' track records.
    """
    # the benchmarks and their statistics: imported by this command alone
    from debate.judgments import TrackRecords
    from debate.quality import calibrate_debates, calibrate_pairwise
    from debate.storage import write_json_atomic

    _check_reading_flags(args)
    config = run_config(args)
    money = cost_and_limits(args)
    items = _items(args)
    out = out_folder(args)
    cache = open_cache(args, out)
    open_store(args)  # a store path that cannot hold the records fails before any call
    with tempfile.TemporaryDirectory() as scratch:
        store = Path(scratch) / "store.sqlite" if args.no_store else store_path(args)
        records = TrackRecords(store)
        shared: dict[str, Any] = {
            "config": config,
            "records": records,
            "seed": args.seed if args.seed is not None else 0,
            "concurrency": args.concurrency,
            "run": Run(
                cache=cache,
                model_path=args.model_path,
                on_event=progress(args),
                **money,
            ),
            "judgments": out,
        }
        if args.format == "debate":
            report = asyncio.run(calibrate_debates(items, **shared))
        else:
            report = asyncio.run(calibrate_pairwise(items, dataset=args.format, **shared))
    path = write_json_atomic(out / "calibration.json", report.model_dump_json(indent=2) + "\n")
    if args.json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    else:
        where = "not stored: --no-store" if args.no_store else f"store {records.path}"
        tidy = f"Judgments: {out / 'judgments.csv'}, labels: {out / 'labels.csv'}\n"
        sys.stdout.write(_summary(report, where) + f"Report: {path}\n" + tidy)
    return EXIT_OK


READING_FLAGS = ("swap", "samples", "presentation", "topics", "topic_type", "topic_classifier")
"""Flags about how judges read a debate; pairwise items are ranked by the council, which
reads no debate, so there they are refused instead of accepted and ignored."""


def _check_reading_flags(args: argparse.Namespace) -> None:
    """Refuse the debate-reading flags outside ``--format debate``."""
    if args.format == "debate":
        return
    for field in READING_FLAGS:
        if getattr(args, field) not in (None, False):
            flag = CONFIG_FLAGS[field]
            raise ConfigurationError(
                f"{flag}: --format {args.format} ranks answer pairs with the council, which "
                f"reads no debate; leave {flag} out or use --format debate"
            )


def _items(args: argparse.Namespace) -> Any:
    """The items of ``args.file`` (at most ``--limit``); none at all is bad input."""
    from debate.quality import load_items, read_debate_items

    with user_file(args.file, f"{args.format} file"):
        if args.format == "debate":
            items: Any = read_debate_items(args.file, args.limit)
        else:
            items = load_items(args.file, args.format, args.limit)
    if not items:
        raise ConfigurationError(f"{args.file}: no items; give a file with one item per line")
    return items


def _summary(report: CalibrationReport, where: str) -> str:
    from debate.quality import format_report

    table = format_report(report, f"{report.dataset}: {report.items} items")
    accuracy = ", ".join(f"{k} {v:.3f}" for k, v in report.accuracy_after.items())
    text = f"{table}\ntrack-record accuracy now: {accuracy} ({where})\n"
    if report.usage is not None:
        u = report.usage
        cost = "not priced" if u.cost_usd is None else f"${u.cost_usd:.4f}"
        text += f"Usage: {u.calls} calls, {u.prompt_tokens + u.completion_tokens} tokens, "
        text += f"cost {cost}\n" + "".join(f"{line}\n" for line in budget_lines(u))
    return text
