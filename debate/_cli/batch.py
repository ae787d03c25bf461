"""``debate batch``: many debates or transcripts from a JSONL file."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from debate._cli.config import run_config
from debate._cli.costs import cost_and_limits
from debate._cli.exits import EXIT_RUNTIME, fail_on_flag, outcome_exit
from debate._cli.files import user_file
from debate._cli.flags import model_flags
from debate._cli.outputs import history, open_cache, open_store, out_folder
from debate._cli.parsing import Commands, subcommand
from debate._cli.progress import JsonlProgress, announce, progress_flag
from debate.batch import (
    BatchItem,
    BatchLine,
    Progress,
    check_concurrency,
    check_workers,
    load_batch,
    parse_shard,
    planned_batch_calls,
    run_batch,
    summary_line,
    take_shard,
)
from debate.exceptions import ConfigurationError
from debate.runtime import ModelPool, Run, closing_pool
from debate.storage import ResponseCache

HELP = "run many debates or judge many transcripts"


def add_parser(commands: Commands) -> None:
    """Register ``debate batch``."""
    batch = subcommand(commands, "batch", batch_command, HELP)
    batch.add_argument("file", metavar="FILE.jsonl", help="one {topic} or {transcript} per line")
    batch.add_argument(
        "--concurrency", type=int, default=8, metavar="N", help="items at once (in all workers)"
    )
    batch.add_argument(
        "--engine",
        choices=("local", "processes", "ray"),
        default=None,
        help="local: this process (the default); processes: this process and copies of it, "
        "one per core of this machine (or --workers), with no rate limit or cost cap; ray: "
        "the worker processes of a Ray cluster (needs the ray extra), one rate limit and one "
        "cost cap over all of them",
    )
    batch.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="the Ray cluster to join (host:port of its head, or auto); implies --engine ray; "
        "default: start a local Ray on this machine",
    )
    batch.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="Ray workers or processes, each with its own clients (default: one per CPU of "
        "the cluster or core of this machine); --workers N above 1 alone means --engine ray "
        "on a local Ray of N CPUs",
    )
    batch.add_argument(
        "--shard",
        metavar="K/N",
        help="run only shard K of N (items assigned by a hash of their id), for N machines; "
        "merge their --out folders with debate merge",
    )
    model_flags(batch)
    progress_flag(batch)
    fail_on_flag(batch)


def batch_command(args: argparse.Namespace) -> int:
    """Run the batch; exit 1 if an item failed, else 3 if ``--fail-on`` lists an outcome.

    Every item, failed or not, is in results.jsonl and the summary (summary.jsonl,
    summary.html).

    ``--concurrency``, every item's config and every item's folder are checked by
    :func:`debate.batch.run_batch`, before any item starts; so is a cost cap over a model
    without a price. ``--engine processes`` forks this process once per core
    (:mod:`debate.batch._processes`); ``--engine ray`` (or ``--ray-address``, or
    ``--workers`` above 1) runs the items on Ray (:mod:`debate.batch._ray`, imported only
    then); ``--shard K/N`` keeps only shard K's items (:mod:`debate.batch._shards`).
    """
    config = run_config(args)
    with user_file(args.file, "batch file"):
        items = load_batch(args.file)
    check_concurrency(args.concurrency)
    check_workers(args.workers, args.concurrency)
    engine = _engine(args)
    shard = None if args.shard is None else parse_shard(args.shard)
    money = cost_and_limits(args)  # --max-cost/--max-tokens cap the whole batch
    out = out_folder(args)
    if shard is not None:
        with user_file(args.file, "batch file"):
            items = take_shard(items, *shard, Path(args.file), out)
    cache = open_cache(args, out)
    store = open_store(args)
    jsonl = None if args.quiet or args.progress != "jsonl" else JsonlProgress()
    text = not args.quiet and jsonl is None
    progress = Progress(len(items), stream=sys.stderr if text else None, listener=jsonl)
    if jsonl is not None:
        announce(jsonl, "batch", planned_batch_calls(items, config, out), len(items))
    seed = args.seed if args.seed is not None else 0
    # what either engine is given the same: the batch, where it goes, and how it is run
    shared: dict[str, Any] = {
        "config": config,
        "out_dir": out,
        "concurrency": args.concurrency,
        "seed": seed,
        "progress": progress,
        "store": store,
    }
    if engine == "processes":
        from debate.batch import run_batch_processes

        run = Run(cache=cache, history=history(args), model_path=args.model_path, **money)
        lines = run_batch_processes(items, workers=args.workers, run=run, **shared)
    elif engine == "ray":
        if cache is not None:
            cache.close()  # each worker opens it
        lines = _on_ray(args, items, cache, money, shared)
    else:
        # The CLI builds the pool so that --model-path reaches it, as it does for `debate run`.
        pool = ModelPool(config, seed=seed, model_path=args.model_path)
        run = Run(pool=pool, cache=cache, history=history(args), **money)
        lines = asyncio.run(closing_pool(pool, run_batch(items, run=run, **shared)))
    return summarise(args, lines, out)


def _engine(args: argparse.Namespace) -> str:
    """``--engine``, ``--ray-address`` and ``--workers`` checked together: the engine.

    ``--workers N`` above 1 with no engine named is a local Ray of N CPUs; with
    ``--engine local`` it is refused (one process has no workers). Ray is imported here,
    only when the batch uses it.
    """
    engine: str | None = args.engine
    if engine is None:
        wants_ray = args.ray_address is not None or (args.workers or 1) > 1
        engine = "ray" if wants_ray else "local"
    if engine in ("local", "processes"):
        if args.ray_address is not None:
            raise ConfigurationError(
                f"--ray-address: a Ray cluster needs --engine ray, not --engine {engine}"
            )
        if engine == "local" and (args.workers or 1) > 1:
            raise ConfigurationError(
                f"--workers: {args.workers} workers need --engine processes or --engine ray "
                "(--engine local is this one process)"
            )
        return engine
    from debate.batch import check_address, require_ray

    require_ray("--engine ray")
    if args.ray_address is not None:  # before any file is written
        check_address(args.ray_address)
    return engine


def _on_ray(
    args: argparse.Namespace,
    items: list[tuple[str, BatchItem]],
    cache: ResponseCache | None,
    money: dict[str, Any],
    shared: dict[str, Any],
) -> list[BatchLine]:
    """Join (or start) the Ray cluster, run the batch on it, and leave it as it was.

    ``shared`` is what :func:`debate.batch.run_batch` would be given; the workers get the
    cache's path (each opens it) and build their own models.
    """
    from debate.batch import run_batch_ray, start_ray, stop_ray

    cpus = args.workers if args.ray_address is None else None
    started = start_ray(args.ray_address, cpus)
    try:
        work = run_batch_ray(
            items,
            workers=args.workers,
            run=Run(model_path=args.model_path, history=history(args), **money),
            cache=None if cache is None else cache.path,
            **shared,
        )
        return asyncio.run(work)
    finally:
        if started:
            stop_ray()


def summarise(args: argparse.Namespace, lines: list[BatchLine], out: Path) -> int:
    """Print the summary (or ``--json``); exit 1 on a failed item, else as ``--fail-on`` says."""
    if args.json:
        sys.stdout.write(_json(lines, out) + "\n")
    else:
        sys.stdout.write(_summary(lines, out))
    if any(line.status == "failed" for line in lines):
        return EXIT_RUNTIME
    return outcome_exit(args, [line.outcome for line in lines if line.outcome])


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
