"""``debate council``: rank candidate answers to a question with a panel of reviewers."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from debate._cli.config import run_config
from debate._cli.costs import cost_and_limits
from debate._cli.exits import EXIT_OK
from debate._cli.files import user_file
from debate._cli.flags import model_flags
from debate._cli.outputs import open_cache, open_store, out_folder
from debate._cli.parsing import Commands, subcommand
from debate._cli.progress import announce, progress, progress_flag
from debate._cli.summaries import budget_lines, cascade_lines
from debate.exceptions import ConfigurationError
from debate.runtime import Run
from debate.stats import fmt

if TYPE_CHECKING:
    from debate.models import Model
    from debate.records import CouncilResult, RankingEntry, Review, RunConfig
    from debate.runtime import ModelPool

HELP = "rank candidate answers to a question"

MAX_CANDIDATES = 100
"""Every reviewer reads every candidate in one prompt; past this no context holds them."""


def add_parser(commands: Commands) -> None:
    """Register ``debate council``."""
    council = subcommand(commands, "council", council_command, HELP)
    council.add_argument("question", help="the question the candidates answer")
    source = council.add_mutually_exclusive_group(required=True)
    source.add_argument("--candidates", metavar="FILE.jsonl", help="one {id, text} per line")
    source.add_argument(
        "--generate", metavar="MODELS", help="comma-separated models that answer first"
    )
    council.add_argument("--method", choices=["normalized", "borda", "rubric"])
    council.add_argument("--safety-gate", action="store_true", help="cap answers flagged unsafe")
    council.add_argument("--category", help="category recorded for the leaderboard")
    model_flags(council, debate_panel=False)
    progress_flag(council)


def _config(args: argparse.Namespace) -> RunConfig:
    config = run_config(args)
    changes: dict[str, Any] = {}
    if args.method is not None:
        changes["method"] = args.method
    if args.safety_gate:
        changes["safety_gate"] = True
    if changes:
        config = config.model_copy(update={"council": config.council.model_copy(update=changes)})
    return config


def _generators(args: argparse.Namespace, pool: ModelPool) -> list[Model] | None:
    """The models named by ``--generate`` (at least two, all different), or None."""
    if not args.generate:
        return None
    names = [n.strip() for n in args.generate.split(",") if n.strip()]
    if len(names) < 2 or len(set(names)) != len(names):
        raise ConfigurationError("--generate: name at least two different models")
    return [pool.get(n) for n in names]


def council_summary(result: CouncilResult, path: str) -> str:
    """Ranking table, interpretation and exclusions, in a few lines."""
    a = result.agreement
    lines = [
        f"Council ranking ({result.method}; {a.reviewers_scored} reviewers scored, "
        f"{a.reviewers_unscored} unscored; reviewer alpha {fmt(a.alpha)})",
        *(_ranking_line(e) for e in result.rankings),
        result.interpretation,
        *(note for review in result.reviews for note in _review_notes(review)),
    ]
    lines += cascade_lines(result.cascade, result.tier)
    lines += budget_lines(result.usage)
    lines.append(f"Result: {path}")
    return "\n".join(lines)


def _ranking_line(e: RankingEntry) -> str:
    """One candidate's row: its rank, z-mean with its standard error, raw mean, Borda share."""
    mean = "-" if e.mean_score is None else f"{e.mean_score:+.2f}"
    se = "-" if e.std_error is None else f"{e.std_error:.2f}"
    raw = "-" if e.raw_mean is None else f"{e.raw_mean:.2f}"
    tie = "  (tied with next)" if e.tied_with_next else ""
    gate = "  (failed safety gate)" if e.safety_failed else ""
    return (
        f"  {e.rank}. {e.candidate:<14} z-mean {mean} ± {se}  raw {raw}  "
        f"borda {e.borda:.2f} ({e.votes} votes, {e.first_places} first, "
        f"{e.confidence} confidence){tie}{gate}"
    )


def _review_notes(review: Review) -> Iterator[str]:
    """What the summary says of one review: the self-votes it lost, and why it is unscored."""
    if review.self_votes_excluded:
        yield f"Self-vote excluded: {review.reviewer} on {', '.join(review.self_votes_excluded)}"
    if review.status == "unscored":
        yield f"Reviewer {review.reviewer} unscored: {review.reason}"


def council_command(args: argparse.Namespace) -> int:
    """Run the council, write result.json and run.json, record it for the leaderboard."""
    # the council's machinery: imported by this command alone
    from debate.council import load_candidates, run_council
    from debate.report import write_report
    from debate.runtime import ModelPool, closing_pool
    from debate.storage import recording_run, resolve_seed, write_json_atomic

    config = _config(args)
    candidates = None
    if args.candidates:
        with user_file(args.candidates, "candidates"):
            candidates = load_candidates(args.candidates)
        if len(candidates) > MAX_CANDIDATES:
            raise ConfigurationError(
                f"candidates {args.candidates}: {len(candidates)} answers; a council ranks at "
                f"most {MAX_CANDIDATES} (every reviewer reads them all in one prompt)"
            )
    money = cost_and_limits(args)
    out = out_folder(args)
    seed, source = resolve_seed(args.seed, out)
    cache = open_cache(args, out)
    store = open_store(args)
    pool = ModelPool(config, seed=seed, model_path=args.model_path)
    generate = _generators(args, pool)
    on_event = progress(args)
    reviewers = len(generate) if generate else len(config.judges)
    announce(on_event, "council", reviewers + (len(generate) if generate else 0))
    with recording_run(seed, source, args.argv, out, cache=cache) as end:
        work = run_council(
            args.question,
            candidates,
            generate=generate,
            config=config,
            seed=seed,
            run=Run(pool=pool, cache=cache, on_event=on_event, **money),
        )
        result = asyncio.run(closing_pool(pool, work))
        path = write_json_atomic(out / "result.json", result.model_dump_json(indent=2) + "\n")
        write_report(result, out)
        if store is not None:
            store.record_council(result, category=args.category)
            end["store"] = str(store.path)
    if args.json:
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
    else:
        sys.stdout.write(council_summary(result, str(path)) + "\n")
    return EXIT_OK
