"""``debate stability``: judge a result's transcript again N times and report the flip rate."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from debate._cli.exits import EXIT_OK
from debate._cli.files import user_file
from debate._cli.parsing import Commands
from debate._cli.values import at_least, seed
from debate.exceptions import ConfigurationError
from debate.records import (
    MAX_SAMPLES,
    CouncilResult,
    DebateResult,
    RunConfig,
    build_config,
    draw_seed,
)

MAX_RUNS = 1000
"""The most re-judgings: each is a whole panel's calls."""

MODEL_FLAGS = {"model": "--model", "base_url": "--base-url", "api_key_env": "--api-key-env"}
"""The result's config fields a flag replaces, and the flag."""


def add_parser(commands: Commands) -> None:
    """Register ``debate stability``."""
    parser = commands.add_parser(
        "stability", help="judge a result's transcript again N times: how often the verdict flips"
    )
    parser.add_argument("result", metavar="RESULT.json", help="a debate's or a council's result")
    parser.add_argument(
        "--runs",
        type=at_least(1, MAX_RUNS),
        default=10,
        metavar="N",
        help="re-judgings, each with another seed (default 10)",
    )
    parser.add_argument(
        "--model", help="model of every judge (default: the result's); 'scripted' for offline"
    )
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint serving --model")
    parser.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="environment variable holding the key of --base-url's server ('' for none)",
    )
    parser.add_argument(
        "--seed",
        type=seed,
        help="base of the runs' seeds (default: the result's seed)",
    )
    parser.add_argument(
        "--samples",
        type=at_least(1, MAX_SAMPLES),
        metavar="K",
        help="readings per judge in each run (default: the result's)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(func=stability_command)


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
    from debate.quality import (
        council_stability,
        debate_stability,
        rejudge,
        rerank,
        run_seeds,
        stability_text,
    )
    from debate.runtime import ModelPool, closing_pool
    from debate.storage import load_result

    if args.model is None and args.base_url is not None:  # before reading anything
        raise ConfigurationError("--model: name the model served at --base-url")
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
        pool.prepare(config, debaters=False)
        runs = asyncio.run(closing_pool(pool, rejudge(result, config, seeds, pool)))
        report = debate_stability(result, runs, args.result)
    else:
        ranked = asyncio.run(closing_pool(pool, rerank(result, config, seeds, pool)))
        report = council_stability(result, ranked, args.result)
    if args.json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    else:
        sys.stdout.write(stability_text(report) + "\n")
    return EXIT_OK
