"""``debate stability``: judge a result's transcript again N times and report the flip rate."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING, Any

from debate._cli.config import MODEL_FLAGS, check_model_flags, model_choice_flags
from debate._cli.exits import EXIT_OK
from debate._cli.files import user_file
from debate._cli.parsing import Commands, count_flag, json_flag, subcommand
from debate._cli.values import seed
from debate.exceptions import ConfigurationError
from debate.records import (
    MAX_SAMPLES,
    CouncilResult,
    DebateResult,
    RunConfig,
    build_config,
    draw_seed,
)

if TYPE_CHECKING:
    from debate.runtime import ModelPool

HELP = "judge a result's transcript again N times: how often the verdict flips"

MAX_RUNS = 1000
"""The most re-judgings: each is a whole panel's calls."""


def add_parser(commands: Commands) -> None:
    """Register ``debate stability``."""
    parser = subcommand(commands, "stability", stability_command, HELP)
    parser.add_argument("result", metavar="RESULT.json", help="a debate's or a council's result")
    count_flag(
        parser,
        "--runs",
        1,
        MAX_RUNS,
        default=10,
        help="re-judgings, each with another seed (default 10)",
    )
    model_choice_flags(
        parser,
        path=False,
        model="model of every judge (default: the result's); 'scripted' for offline",
        base_url="OpenAI-compatible endpoint serving --model",
        api_key_env="environment variable holding the key of --base-url's server ('' for none)",
    )
    parser.add_argument(
        "--seed",
        type=seed,
        help="base of the runs' seeds (default: the result's seed)",
    )
    count_flag(
        parser,
        "--samples",
        1,
        MAX_SAMPLES,
        metavar="K",
        help="readings per judge in each run (default: the result's)",
    )
    json_flag(parser, "print the report as JSON")


def _config(args: argparse.Namespace, recorded: RunConfig) -> RunConfig:
    """The result's config with the model flags (and ``--samples``) on top."""
    data: dict[str, Any] = recorded.model_dump()
    given = {k: getattr(args, k) for k in MODEL_FLAGS if getattr(args, k) is not None}
    if args.model is not None:  # every judge on this model, at this server (or none)
        data["judges"] = [{**j, "model": None, "endpoint": None} for j in data["judges"]]
        if args.base_url is None:
            data["base_url"] = None
    data.update(given)
    if args.samples is not None:
        data["samples"] = args.samples
    return build_config(data, "config", {**MODEL_FLAGS, "samples": "--samples"})


def stability_command(args: argparse.Namespace) -> int:
    """Re-judge ``args.result`` ``--runs`` times; print the report."""
    from debate.quality import council_stability, debate_stability, run_seeds, stability_text
    from debate.runtime import ModelPool
    from debate.storage import load_result

    check_model_flags(args)  # before reading anything
    with user_file(args.result, "result"):
        result = load_result(args.result)
    assert isinstance(result, DebateResult | CouncilResult)
    if isinstance(result, CouncilResult) and args.samples is not None:
        raise ConfigurationError(
            "--samples: a council's reviewers read the candidates once; leave it out"
        )
    config = _config(args, result.config)
    # A result without a seed (none is written so) gets one drawn, and the runs say which.
    base = draw_seed(args.seed if args.seed is not None else result.seed)
    seeds = run_seeds(base, args.runs)
    pool = ModelPool(config, seed=base)
    if isinstance(result, DebateResult):
        report = debate_stability(result, _rejudged(result, config, seeds, pool), args.result)
    else:
        report = council_stability(result, _reranked(result, config, seeds, pool), args.result)
    if args.json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    else:
        sys.stdout.write(stability_text(report) + "\n")
    return EXIT_OK


def _rejudged(
    result: DebateResult, config: RunConfig, seeds: list[int], pool: ModelPool
) -> list[DebateResult]:
    """The debate's transcript judged again once per seed, by the judges alone."""
    from debate.quality import rejudge
    from debate.runtime import closing_pool

    pool.prepare(config, debaters=False)  # no debater is asked: only its judges are built
    return asyncio.run(closing_pool(pool, rejudge(result, config, seeds, pool)))


def _reranked(
    result: CouncilResult, config: RunConfig, seeds: list[int], pool: ModelPool
) -> list[CouncilResult]:
    """The council's candidates ranked again once per seed."""
    from debate.quality import rerank
    from debate.runtime import closing_pool

    return asyncio.run(closing_pool(pool, rerank(result, config, seeds, pool)))
