"""``debate batch``: many debates or transcripts from a JSONL file."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from debate._cli import common
from debate._cli.common import EXIT_RUNTIME, Commands
from debate.batch import (
    BatchLine,
    Progress,
    check_concurrency,
    load_batch,
    planned_batch_calls,
    run_batch,
    summary_line,
)
from debate.batch._shards import parse_shard, take_shard
from debate.batch._workers import check_workers, run_batch_workers
from debate.runtime._pool import ModelPool, closing_pool


def add_parser(commands: Commands) -> None:
    """Register ``debate batch``."""
    batch = commands.add_parser("batch", help="run many debates or judge many transcripts")
    batch.add_argument("file", metavar="FILE.jsonl", help="one {topic} or {transcript} per line")
    batch.add_argument(
        "--concurrency", type=int, default=8, metavar="N", help="items at once (in all workers)"
    )
    batch.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="worker processes on this machine, each with its own clients (default 1: this "
        "process); for when one process's CPU is the limit",
    )
    batch.add_argument(
        "--shard",
        metavar="K/N",
        help="run only shard K of N (items assigned by a hash of their id), for N machines; "
        "merge their --out folders with debate merge",
    )
    common.model_flags(batch)
    common.progress_flag(batch)
    common.fail_on_flag(batch)
    batch.set_defaults(func=batch_command)


def batch_command(args: argparse.Namespace) -> int:
    """Run the batch; exit 1 if an item failed, else 3 if ``--fail-on`` lists an outcome.

    Every item, failed or not, is in results.jsonl and the summary (summary.jsonl,
    summary.html).

    ``--concurrency``, every item's config and every item's folder are checked by
    :func:`debate.batch.run_batch`, before any item starts; so is a cost cap over a model
    without a price. ``--workers`` above 1 runs the items in that many processes
    (:mod:`debate.batch._workers`); ``--shard K/N`` keeps only shard K's items
    (:mod:`debate.batch._shards`).
    """
    config = common.run_config(args)
    with common.user_file(args.file, "batch file"):
        items = load_batch(args.file)
    check_concurrency(args.concurrency)
    check_workers(args.workers, args.concurrency)
    shard = None if args.shard is None else parse_shard(args.shard)
    money = common.cost_and_limits(args)  # --max-cost/--max-tokens cap the whole batch
    out = common.out_folder(args)
    if shard is not None:
        with common.user_file(args.file, "batch file"):
            items = take_shard(items, *shard, Path(args.file), out)
    cache = common.open_cache(args, out)
    store = common.open_store(args)
    jsonl = None if args.quiet or args.progress != "jsonl" else common.JsonlProgress()
    text = not args.quiet and jsonl is None
    progress = Progress(len(items), stream=sys.stderr if text else None, listener=jsonl)
    if jsonl is not None:
        common.announce(jsonl, "batch", planned_batch_calls(items, config, out), len(items))
    seed = args.seed if args.seed is not None else 0
    if args.workers > 1:
        if cache is not None:
            cache.close()  # each worker opens it
        work = run_batch_workers(
            items,
            config=config,
            out_dir=out,
            workers=args.workers,
            concurrency=args.concurrency,
            cache=None if cache is None else cache.path,
            **money,
            seed=seed,
            model_path=args.model_path,
            progress=progress,
            history=common.history(args),
            store=None if store is None else store.path,
        )
        lines = asyncio.run(work)
    else:
        # The CLI builds the pool so that --model-path reaches it, as it does for `debate run`.
        pool = ModelPool(config, seed=seed, model_path=args.model_path)
        work = run_batch(
            items,
            config=config,
            out_dir=out,
            concurrency=args.concurrency,
            cache=cache,
            **money,
            pool=pool,
            seed=seed,
            progress=progress,
            history=common.history(args),
            store=store,
        )
        lines = asyncio.run(closing_pool(pool, work))
    return summarise(args, lines, out)


def summarise(args: argparse.Namespace, lines: list[BatchLine], out: Path) -> int:
    """Print the summary (or ``--json``); exit 1 on a failed item, else as ``--fail-on`` says."""
    if args.json:
        sys.stdout.write(_json(lines, out) + "\n")
    else:
        sys.stdout.write(_summary(lines, out))
    if any(line.status == "failed" for line in lines):
        return EXIT_RUNTIME
    return common.outcome_exit(args, [line.outcome for line in lines if line.outcome])


def _json(lines: list[BatchLine], out: Path) -> str:
    """``--json``: the counts, the summary files and every item's line, as one object."""
    failed = sum(line.status == "failed" for line in lines)
    return json.dumps(
        {
            "items": len(lines),
            "ok": len(lines) - failed,
            "failed": failed,
            "results": str(out / "results.jsonl"),
            "summary": str(out / "summary.jsonl"),
            "summary_html": str(out / "summary.html"),
            "lines": [summary_line(line, out).model_dump(mode="json") for line in lines],
        },
        indent=2,
    )


def _summary(lines: list[BatchLine], out: Path) -> str:
    """Items ok and failed, calls, tokens and (when every price is known) the cost."""
    failed = [line for line in lines if line.status == "failed"]
    calls = sum(line.calls or 0 for line in lines)
    prompt = sum(line.prompt_tokens or 0 for line in lines)
    completion = sum(line.completion_tokens or 0 for line in lines)
    cached = sum(line.cached_tokens or 0 for line in lines)
    costs = [line.cost_usd for line in lines if line.status == "ok"]
    cost = (
        f", cost ${sum(c for c in costs if c is not None):.4f}"
        if costs and all(c is not None for c in costs)
        else ""
    )
    skipped = sum(line.skipped or 0 for line in lines)
    cost += f", {skipped} calls not made (budget)" if skipped else ""
    text = (
        f"{len(lines) - len(failed)} of {len(lines)} items ok, {len(failed)} failed; "
        f"{calls} calls, {prompt} prompt + {completion} completion tokens "
        f"({cached} cached){cost}\nResults: {out / 'results.jsonl'}\n"
        f"Summary: {out / 'summary.html'}\n"
    )
    return text + "".join(f"  failed {line.id}: {line.error}\n" for line in failed)
