"""``debate council`` and ``debate leaderboard``."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from debate._cli.common import (
    EXIT_OK,
    EXIT_RUNTIME,
    EXIT_USAGE,
    ProgressPrinter,
    model_flags,
    overrides,
)
from debate.council._run import load_candidates, run_council
from debate.exceptions import ConfigurationError, DebateError
from debate.records._config import RunConfig, load_config
from debate.records._council import CouncilResult
from debate.report import write_report
from debate.runtime._pool import ModelPool, closing_pool
from debate.storage._cache import ResponseCache
from debate.storage._files import write_json_atomic
from debate.storage._runinfo import finish_run, resolve_seed, start_run
from debate.storage._runs import RunStore


def add_council_parsers(commands: Any) -> None:
    """Register the council and leaderboard subcommands."""
    council = commands.add_parser("council", help="rank candidate answers to a question")
    council.add_argument("question", help="the question the candidates answer")
    source = council.add_mutually_exclusive_group(required=True)
    source.add_argument("--candidates", metavar="FILE.jsonl", help="one {id, text} per line")
    source.add_argument(
        "--generate", metavar="MODELS", help="comma-separated models that answer first"
    )
    council.add_argument("--method", choices=["normalized", "borda", "rubric"])
    council.add_argument("--safety-gate", action="store_true", help="cap answers flagged unsafe")
    council.add_argument("--category", help="category recorded for the leaderboard")
    model_flags(council)
    board = commands.add_parser("leaderboard", help="models ranked across council questions")
    board.add_argument("--store", metavar="PATH", help="run store to read")
    board.add_argument("--since", type=float, metavar="DAYS", help="only the last DAYS days")
    board.add_argument("--category", help="only this category")
    board.add_argument("--json", action="store_true", help="machine-readable output")


def _config(args: argparse.Namespace) -> RunConfig:
    config = load_config(args.config, overrides(args))
    changes: dict[str, Any] = {}
    if args.method is not None:
        changes["method"] = args.method
    if args.safety_gate:
        changes["safety_gate"] = True
    if changes:
        config = config.model_copy(update={"council": config.council.model_copy(update=changes)})
    return config


def council_summary(result: CouncilResult, path: str) -> str:
    """Ranking table, interpretation and exclusions, in a few lines."""
    a = result.agreement
    alpha = "undefined" if a.alpha is None else f"{a.alpha:.3f}"
    lines = [
        f"Council ranking ({result.method}; {a.reviewers_scored} reviewers scored, "
        f"{a.reviewers_unscored} unscored; reviewer alpha {alpha})"
    ]
    for e in result.rankings:
        mean = "-" if e.mean_score is None else f"{e.mean_score:+.2f}"
        se = "-" if e.std_error is None else f"{e.std_error:.2f}"
        raw = "-" if e.raw_mean is None else f"{e.raw_mean:.2f}"
        tie = "  (tied with next)" if e.tied_with_next else ""
        gate = "  (failed safety gate)" if e.safety_failed else ""
        lines.append(
            f"  {e.rank}. {e.candidate:<14} z-mean {mean} ± {se}  raw {raw}  "
            f"borda {e.borda:.2f} ({e.votes} votes, {e.first_places} first, "
            f"{e.confidence} confidence){tie}{gate}"
        )
    lines.append(result.interpretation)
    for review in result.reviews:
        if review.self_votes_excluded:
            lines.append(
                f"Self-vote excluded: {review.reviewer} on {', '.join(review.self_votes_excluded)}"
            )
        if review.status == "unscored":
            lines.append(f"Reviewer {review.reviewer} unscored: {review.reason}")
    lines.append(f"Result: {path}")
    return "\n".join(lines)


def council_main(args: argparse.Namespace, argv: list[str]) -> int:
    """Run the council, write result.json and run.json, record it for the leaderboard."""
    out = Path(args.out)
    try:
        config = _config(args)
        candidates = load_candidates(args.candidates) if args.candidates else None
        seed, source = resolve_seed(args.seed, out)
        cache = None if args.no_cache else ResponseCache(args.cache or out / "cache.sqlite")
        generate = None
        pool = ModelPool(
            config, api_key_env=args.api_key_env, seed=seed, model_path=args.model_path
        )
        if args.generate:
            names = [n.strip() for n in args.generate.split(",") if n.strip()]
            if len(names) < 2 or len(set(names)) != len(names):
                raise ConfigurationError("--generate: name at least two different models")
            generate = [pool.get(n) for n in names]
    except ConfigurationError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_USAGE
    info = start_run(seed, source, argv, out)
    try:
        result = asyncio.run(
            closing_pool(
                pool,
                run_council(
                    args.question,
                    candidates,
                    generate=generate,
                    config=config,
                    seed=seed,
                    cache=cache,
                    pool=pool,
                    on_event=None if args.quiet else ProgressPrinter(),
                ),
            )
        )
        path = write_json_atomic(out / "result.json", result.model_dump_json(indent=2) + "\n")
        write_report(result, out)
        if not args.no_store:
            RunStore(args.store).record_council(result, category=args.category)
    except ConfigurationError as exc:
        finish_run(info, out, status="failed", error=str(exc))
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_USAGE
    except DebateError as exc:
        finish_run(info, out, status="failed", error=str(exc))
        sys.stderr.write(f"failed: {exc}\n")
        return EXIT_RUNTIME
    finish_run(info, out, status="finished")
    if args.json:
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
    else:
        sys.stdout.write(council_summary(result, str(path)) + "\n")
    return EXIT_OK


def leaderboard_main(args: argparse.Namespace) -> int:
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
