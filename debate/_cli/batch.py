"""``debate batch``: many debates or transcripts from a JSONL file."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from debate._cli import common
from debate._cli.common import EXIT_OK, Commands
from debate.batch import BatchLine, Progress, check_concurrency, load_batch, run_batch
from debate.records._transcript import Frozen
from debate.runtime._limiter import RateLimiter
from debate.runtime._pool import ModelPool, closing_pool
from debate.runtime._pricing import PriceTable


def add_parser(commands: Commands) -> None:
    """Register ``debate batch``."""
    batch = commands.add_parser("batch", help="run many debates or judge many transcripts")
    batch.add_argument("file", metavar="FILE.jsonl", help="one {topic} or {transcript} per line")
    batch.add_argument("--concurrency", type=int, default=8, metavar="N", help="items at once")
    batch.add_argument(
        "--rpm", type=int, metavar="R", help="requests per minute, all items (default: no limit)"
    )
    batch.add_argument(
        "--tpm", type=int, metavar="T", help="tokens per minute, all items (default: no limit)"
    )
    batch.add_argument("--prices", metavar="FILE", help="price table TOML (USD per 1M tokens)")
    common.model_flags(batch)
    batch.set_defaults(func=batch_command)


def batch_command(args: argparse.Namespace) -> int:
    """Run the batch; exit 0 even when some items failed (they are in results.jsonl).

    ``--concurrency``, every item's config and every item's folder are checked by
    :func:`debate.batch.run_batch`, before any item starts. ``--rpm 0`` is refused by the
    limiter: leaving the flag out is how to ask for no limit.
    """
    config = common.run_config(args)
    with common.user_file(args.file, "batch file"):
        items = load_batch(args.file)
    check_concurrency(args.concurrency)
    given = args.rpm is not None or args.tpm is not None
    limiter = RateLimiter(args.rpm, args.tpm) if given else None
    prices = None
    if args.prices:
        with common.user_file(args.prices, "price table"):
            prices = PriceTable.load(args.prices)
    out = common.out_folder(args)
    cache = common.open_cache(args, out)
    store = common.open_store(args)
    progress = Progress(len(items), stream=None if args.quiet else sys.stderr)
    seed = args.seed if args.seed is not None else 0
    # The CLI builds the pool so that --model-path reaches it, as it does for `debate run`.
    pool = ModelPool(config, api_key_env=args.api_key_env, seed=seed, model_path=args.model_path)
    work = run_batch(
        items,
        config=config,
        out_dir=out,
        concurrency=args.concurrency,
        limiter=limiter,
        cache=cache,
        prices=prices,
        pool=pool,
        api_key_env=args.api_key_env,
        seed=seed,
        progress=progress,
        history=common.history(args),
        store=store,
    )
    lines = asyncio.run(closing_pool(pool, work))
    if args.json:
        sys.stdout.write(BatchSummary.of(lines, out).model_dump_json(indent=2) + "\n")
    else:
        sys.stdout.write(_summary(lines, out))
    return EXIT_OK


class BatchSummary(Frozen):
    """What ``batch --json`` prints: the totals of the run and every item's line."""

    ok: int
    failed: int
    results: str
    """Path of results.jsonl."""
    items: list[BatchLine]

    @classmethod
    def of(cls, lines: list[BatchLine], out: Path) -> BatchSummary:
        """The summary of a finished batch."""
        failed = sum(line.status == "failed" for line in lines)
        return cls(
            ok=len(lines) - failed,
            failed=failed,
            results=str(out / "results.jsonl"),
            items=lines,
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
    text = (
        f"{len(lines) - len(failed)} of {len(lines)} items ok, {len(failed)} failed; "
        f"{calls} calls, {prompt} prompt + {completion} completion tokens "
        f"({cached} cached){cost}\nResults: {out / 'results.jsonl'}\n"
    )
    return text + "".join(f"  failed {line.id}: {line.error}\n" for line in failed)
