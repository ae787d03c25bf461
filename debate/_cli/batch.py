"""``debate batch``: many debates or transcripts from a JSONL file."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from debate._cli.common import EXIT_OK, EXIT_USAGE, model_flags, overrides
from debate.batch import Progress, load_batch, run_batch
from debate.exceptions import ConfigurationError
from debate.quality._track import TrackRecords
from debate.records._config import load_config
from debate.runtime._limiter import RateLimiter
from debate.runtime._pricing import PriceTable
from debate.storage._cache import ResponseCache
from debate.storage._runs import RunStore, default_store_path


def add_batch_parser(commands: Any) -> None:
    """Register the batch subcommand."""
    batch = commands.add_parser("batch", help="run many debates or judge many transcripts")
    batch.add_argument("file", metavar="FILE.jsonl", help="one {topic} or {transcript} per line")
    batch.add_argument("--concurrency", type=int, default=8, metavar="N", help="items at once")
    batch.add_argument("--rpm", type=int, metavar="R", help="requests per minute, all items")
    batch.add_argument("--tpm", type=int, metavar="T", help="tokens per minute, all items")
    batch.add_argument("--prices", metavar="FILE", help="price table TOML (USD per 1M tokens)")
    model_flags(batch)


def batch_main(args: argparse.Namespace) -> int:
    """Run the batch; exit 0 even when some items failed (they are in results.jsonl)."""
    out = Path(args.out)
    try:
        config = load_config(args.config, overrides(args))
        items = load_batch(args.file)
        limiter = RateLimiter(args.rpm, args.tpm) if (args.rpm or args.tpm) else None
        prices = PriceTable.load(args.prices) if args.prices else None
        cache = None if args.no_cache else ResponseCache(args.cache or out / "cache.sqlite")
        if args.concurrency < 1:
            raise ConfigurationError(f"--concurrency: {args.concurrency} must be at least 1")
    except ConfigurationError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_USAGE
    progress = Progress(len(items), stream=None if args.quiet else sys.stderr)
    store_path = Path(args.store) if args.store else default_store_path()
    lines = asyncio.run(
        run_batch(
            items,
            config=config,
            out_dir=out,
            concurrency=args.concurrency,
            limiter=limiter,
            cache=cache,
            prices=prices,
            api_key_env=args.api_key_env,
            seed=args.seed if args.seed is not None else 0,
            progress=progress,
            history=None if args.no_store else TrackRecords(store_path).all_accuracies(),
            store=None if args.no_store else RunStore(store_path),
        )
    )
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
    sys.stdout.write(
        f"{len(lines) - len(failed)} of {len(lines)} items ok, {len(failed)} failed; "
        f"{calls} calls, {prompt} prompt + {completion} completion tokens "
        f"({cached} cached){cost}\nResults: {out / 'results.jsonl'}\n"
    )
    for line in failed:
        sys.stdout.write(f"  failed {line.id}: {line.error}\n")
    return EXIT_OK
