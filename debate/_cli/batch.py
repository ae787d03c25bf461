"""``debate batch``: many debates or transcripts from a JSONL file."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from debate._cli import common
from debate._cli.common import EXIT_OK, Commands
from debate._cli.run import cost_and_limits
from debate.batch import BatchLine, Progress, check_concurrency, load_batch, run_batch


def add_parser(commands: Commands) -> None:
    """Register ``debate batch``."""
    batch = commands.add_parser("batch", help="run many debates or judge many transcripts")
    batch.add_argument("file", metavar="FILE.jsonl", help="one {topic} or {transcript} per line")
    batch.add_argument("--concurrency", type=int, default=8, metavar="N", help="items at once")
    common.model_flags(batch)
    batch.set_defaults(func=batch_command)


def batch_command(args: argparse.Namespace) -> int:
    """Run the batch; exit 0 even when some items failed (they are in results.jsonl).

    ``--concurrency``, every item's config and every item's folder are checked by
    :func:`debate.batch.run_batch`, before any item starts; so is a cost cap over a model
    without a price.
    """
    config = common.run_config(args)
    with common.user_file(args.file, "batch file"):
        items = load_batch(args.file)
    check_concurrency(args.concurrency)
    money = cost_and_limits(args)  # --max-cost/--max-tokens cap the whole batch
    out = common.out_folder(args)
    cache = common.open_cache(args, out)
    store = common.open_store(args)
    progress = Progress(len(items), stream=None if args.quiet else sys.stderr)
    lines = asyncio.run(
        run_batch(
            items,
            config=config,
            out_dir=out,
            concurrency=args.concurrency,
            cache=cache,
            **money,
            seed=args.seed if args.seed is not None else 0,
            progress=progress,
            history=common.history(store),
            store=store,
        )
    )
    sys.stdout.write(_summary(lines, out))
    return EXIT_OK


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
    )
    return text + "".join(f"  failed {line.id}: {line.error}\n" for line in failed)
