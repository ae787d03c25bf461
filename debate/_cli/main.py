"""The ``debate`` command.

Exit codes: 0 for any outcome (a split is a result, not an error), 2 for a usage or
configuration error, 1 for a runtime failure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from debate._cli.batch import add_batch_parser, batch_main
from debate._cli.calibrate import add_calibrate_parser, calibrate_main
from debate._cli.common import (
    EXIT_OK,
    EXIT_RUNTIME,
    EXIT_USAGE,
    Parser,
    ProgressPrinter,
    model_flags,
    overrides,
)
from debate._cli.council import add_council_parsers, council_main, leaderboard_main
from debate._cli.report import report_main
from debate._version import __version__
from debate.api import judge_transcript, load_transcript, run_debate, write_result
from debate.exceptions import ConfigurationError, DebateError
from debate.quality._track import TrackRecords
from debate.records._config import RunConfig, load_config
from debate.records._result import DebateResult
from debate.report import write_report
from debate.storage._cache import ResponseCache
from debate.storage._runinfo import finish_run, resolve_seed, start_run
from debate.storage._runs import RunStore, default_store_path


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``debate`` command."""
    parser = Parser(
        prog="debate", description="Structured LLM debates, judged by a calibrated panel."
    )
    parser.add_argument("--version", action="version", version=f"debate {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    run = commands.add_parser("run", help="run a debate on a topic and judge it")
    run.add_argument("topic", help="the proposition to debate")
    run.add_argument(
        "--arguments", type=int, metavar="N", help="arguments per side (1-10, default 3)"
    )
    run.add_argument("--rounds", type=int, metavar="N", help="cross-examination rounds (default 1)")
    model_flags(run)
    judge = commands.add_parser("judge", help="judge a transcript written by anyone")
    judge.add_argument("transcript", metavar="TRANSCRIPT.json")
    model_flags(judge)
    add_council_parsers(commands)
    add_batch_parser(commands)
    add_calibrate_parser(commands)
    audit = commands.add_parser("audit", help="position, length and self-preference bias")
    audit.add_argument("--store", metavar="PATH", help="run store to audit")
    audit.add_argument("--json", action="store_true", help="machine-readable output")
    report = commands.add_parser(
        "report", help="write report.md and report.html for a result.json", add_help=False
    )
    report.add_argument("rest", nargs=argparse.REMAINDER)
    agreement = commands.add_parser(
        "agreement", help="agreement statistics for a ratings CSV", add_help=False
    )
    agreement.add_argument("rest", nargs=argparse.REMAINDER)
    return parser


def summary(result: DebateResult, path: str) -> str:
    """A short human summary of a result."""
    d, a, v = result.decision, result.agreement, result.vote
    if d.outcome == "winner":
        head = f"Decision: {d.winner} wins"
    else:
        head = {
            "too_close": "Decision: too close to call",
            "irreconcilable": "Decision: none - the judges do not agree (irreconcilable)",
            "insufficient": "Decision: none - too few judges could score (insufficient)",
        }[d.outcome]
    lines = [head]
    if v.margin is not None:
        ci = f", 95% CI [{v.margin_ci[0]:+.3f}, {v.margin_ci[1]:+.3f}]" if v.margin_ci else ""
        lines.append(
            f"Margin PRO-CON: {v.margin:+.3f}{ci} ({v.calibration} calibration, "
            f"topic type {v.topic_type})"
        )

    def fmt(x: float | None) -> str:
        return "undefined" if x is None else f"{x:.3f}"

    lines.append(
        f"Agreement: alpha {fmt(a.alpha)}, kappa {fmt(a.kappa)}; "
        f"{a.judges_scored} judges scored, {a.judges_unscored} unscored"
    )
    lines += [f"  - {r}" for r in d.reasons]
    lines.append(f"Recommendation: {d.recommendation}")
    u = result.usage
    lines.append(
        f"Usage: {u.calls} calls, {u.prompt_tokens} prompt + {u.completion_tokens} completion "
        f"tokens, {u.retries} retries"
    )
    lines.append(f"Result: {path}")
    return "\n".join(lines)


async def _run(
    args: argparse.Namespace, config: RunConfig, seed: int, cache: ResponseCache | None
) -> DebateResult:
    handler = None if args.quiet else ProgressPrinter()
    common: dict[str, Any] = {
        "config": config,
        "seed": seed,
        "api_key_env": args.api_key_env,
        "model_path": args.model_path,
        "on_event": handler,
        "cache": cache,
        "history": None if args.no_store else TrackRecords(store_path(args)).all_accuracies(),
    }
    if args.command == "run":
        return await run_debate(args.topic, **common)
    transcript = load_transcript(args.transcript)
    return await judge_transcript(transcript, **common)


def store_path(args: argparse.Namespace) -> Path:
    """``--store``, else the default store."""
    return Path(args.store) if args.store else default_store_path()


def _debate(args: argparse.Namespace, argv: list[str]) -> int:
    """``debate run`` and ``debate judge``: run, write result.json and run.json, record."""
    out = Path(args.out)
    try:
        config = load_config(args.config, overrides(args))
        if args.command == "judge":
            load_transcript(args.transcript)  # refuse a bad transcript before any work
        seed, source = resolve_seed(args.seed, out)
        cache = None if args.no_cache else ResponseCache(args.cache or out / "cache.sqlite")
    except ConfigurationError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_USAGE
    info = start_run(seed, source, argv, out)
    cache_info: dict[str, Any] = {"cache": None if cache is None else str(cache.path)}
    try:
        result = asyncio.run(_run(args, config, seed, cache))
        path = write_result(result, out)
        _, report_html = write_report(result, out)
        store = None if args.no_store else RunStore(args.store)
        if store is not None:
            store.record(result)
    except ConfigurationError as exc:
        finish_run(info, out, status="failed", error=str(exc), **cache_info)
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_USAGE
    except DebateError as exc:
        finish_run(info, out, status="failed", error=str(exc), **cache_info)
        sys.stderr.write(f"failed: {exc}\n")
        return EXIT_RUNTIME
    except KeyboardInterrupt:
        finish_run(info, out, status="interrupted", **cache_info)
        sys.stderr.write(
            "interrupted: completed calls are kept in the response cache; run the same "
            "command again to continue\n"
        )
        return 130
    if cache is not None:
        cache_info.update(cache_hits=cache.hits, cache_misses=cache.misses)
    finish_run(
        info, out, status="finished", store=None if store is None else str(store.path), **cache_info
    )
    if args.json:
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
    else:
        sys.stdout.write(summary(result, str(path)) + f"\nReport: {report_html}\n")
    return EXIT_OK


def _audit(args: argparse.Namespace) -> int:
    from debate.quality._audit import audit, format_audit

    store = RunStore(args.store)
    rows = audit(store)
    if args.json:
        sys.stdout.write(json.dumps([r.model_dump() for r in rows], indent=2) + "\n")
    else:
        sys.stdout.write(f"store: {store.path} ({store.count_runs()} runs)\n")
        sys.stdout.write(format_audit(rows) + "\n")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``debate`` command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["agreement"]:
        from debate._cli.agreement import agreement_main

        return agreement_main(argv[1:])
    if argv[:1] == ["report"]:
        return report_main(argv[1:])
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse: usage errors, --help, --version
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    logging.basicConfig(
        level=logging.ERROR if getattr(args, "quiet", False) else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if args.command == "audit":
        return _audit(args)
    if args.command == "council":
        return council_main(args, argv)
    if args.command == "leaderboard":
        return leaderboard_main(args)
    if args.command == "batch":
        return batch_main(args)
    if args.command == "calibrate":
        return calibrate_main(args)
    return _debate(args, argv)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
