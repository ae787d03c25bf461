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
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from debate._version import __version__
from debate.api import judge_transcript, load_transcript, run_debate, write_result
from debate.cache import ResponseCache
from debate.config import RunConfig, default_judges, load_config
from debate.events import Event, StepFinished
from debate.exceptions import ConfigurationError, DebateError
from debate.result import DebateResult
from debate.runinfo import finish_run, resolve_seed, start_run
from debate.store import RunStore

EXIT_OK, EXIT_RUNTIME, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in one line with exit code 2."""

    def error(self, message: str) -> Any:
        self.exit(EXIT_USAGE, f"error: {message} (see {self.prog} --help)\n")


def _model_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("model")
    group.add_argument(
        "--model",
        help="model for debaters and judges: 'local' (embedded, default), 'scripted' "
        "(offline placeholder) or a model name served at --base-url / by OpenAI",
    )
    group.add_argument(
        "--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1"
    )
    group.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        metavar="NAME",
        help="environment variable holding the API key (default OPENAI_API_KEY)",
    )
    group.add_argument("--model-path", metavar="FILE.gguf", help="run this GGUF file in-process")
    panel = parser.add_argument_group("panel")
    panel.add_argument("--config", metavar="FILE", help="panel config TOML")
    panel.add_argument(
        "--judges", metavar="LIST", help="comma-separated roles, e.g. technical,risk"
    )
    panel.add_argument(
        "--templates", metavar="DIR", help="folder of templates overriding the shipped ones"
    )
    panel.add_argument(
        "--topics", metavar="FILE", help="topic profile TOML replacing the shipped one"
    )
    panel.add_argument("--topic-type", help="set the topic type instead of detecting it")
    panel.add_argument("--seed", type=int, help="sampling seed (recorded in the result)")
    calls = parser.add_argument_group("calls")
    calls.add_argument("--timeout", type=float, metavar="S", help="per-call timeout in seconds")
    calls.add_argument("--deadline", type=float, metavar="S", help="wall-clock budget of the run")
    calls.add_argument("--max-retries", type=int, metavar="N", help="re-asks after invalid output")
    calls.add_argument(
        "--cache",
        metavar="PATH",
        help="response cache (SQLite; default OUT/cache.sqlite): re-running resumes",
    )
    calls.add_argument("--no-cache", action="store_true", help="do not read or write a cache")
    panel.add_argument(
        "--presentation",
        choices=["counterbalanced", "fixed"],
        help="per-judge reading order (default counterbalanced)",
    )
    panel.add_argument("--swap", action="store_true", help="every judge reads twice, sides swapped")
    out = parser.add_argument_group("output")
    out.add_argument("--out", default="debate-out", metavar="DIR", help="where result.json goes")
    out.add_argument("--json", action="store_true", help="print the result JSON on stdout")
    out.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    _store_flags(out)


def _store_flags(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--store", metavar="PATH", help="run store (default: DEBATE_STORE or the user data dir)"
    )
    group.add_argument("--no-store", action="store_true", help="do not record the run")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``debate`` command."""
    parser = _Parser(
        prog="debate", description="Structured LLM debates, judged by a calibrated panel."
    )
    parser.add_argument("--version", action="version", version=f"debate {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = commands.add_parser("run", help="run a debate on a topic and judge it")
    run.add_argument("topic", help="the proposition to debate")
    run.add_argument(
        "--arguments", type=int, metavar="N", help="arguments per side (1-10, default 3)"
    )
    run.add_argument("--rounds", type=int, metavar="N", help="cross-examination rounds (default 1)")
    _model_flags(run)
    judge = commands.add_parser("judge", help="judge a transcript written by anyone")
    judge.add_argument("transcript", metavar="TRANSCRIPT.json")
    _model_flags(judge)
    audit = commands.add_parser("audit", help="position, length and self-preference bias")
    audit.add_argument("--store", metavar="PATH", help="run store to audit")
    audit.add_argument("--json", action="store_true", help="machine-readable output")
    agreement = commands.add_parser(
        "agreement", help="agreement statistics for a ratings CSV", add_help=False
    )
    agreement.add_argument("rest", nargs=argparse.REMAINDER)
    return parser


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    values: dict[str, Any] = {
        "model": args.model,
        "base_url": args.base_url,
        "templates": args.templates,
        "topics": args.topics,
        "topic_type": args.topic_type,
        "timeout": args.timeout,
        "deadline": args.deadline,
        "max_retries": args.max_retries,
        "presentation": args.presentation,
        "swap": True if args.swap else None,
    }
    if args.judges is not None:
        roles = [r.strip() for r in args.judges.split(",") if r.strip()]
        if len(roles) < 2:
            raise ConfigurationError(
                f"--judges: {len(roles)} judge(s) given; a panel needs at least two roles"
            )
        values["judges"] = [j.model_dump() for j in default_judges(roles)]
    for flag in ("arguments", "rounds"):
        value = getattr(args, flag, None)
        if value is None:
            continue
        low, high = (1, 10) if flag == "arguments" else (0, 5)
        if not low <= value <= high:
            raise ConfigurationError(f"--{flag}: {value} is out of range; use {low} to {high}")
        values[flag] = value
    if args.model is None and args.base_url is not None:
        raise ConfigurationError("--model: name the model served at --base-url")
    return values


class ProgressPrinter:
    """One line per finished step on stderr, with elapsed time and tokens/s."""

    def __init__(self) -> None:
        self.start = time.perf_counter()

    def __call__(self, event: Event) -> None:
        """Print a line for a finished step."""
        if not isinstance(event, StepFinished):
            return
        total = time.perf_counter() - self.start
        rate = event.completion_tokens / event.elapsed if event.elapsed > 0 else 0.0
        step = event.phase.replace("_", " ")
        if event.round is not None:
            step += f" {event.round}"
        status = "ok" if event.ok else f"FAILED ({event.detail})"
        retry = f", {event.attempts} attempts" if event.attempts > 1 else ""
        sys.stderr.write(
            f"[{total:7.1f}s] {step:<20} {event.actor:<12} {status}  {event.elapsed:5.1f}s  "
            f"{event.completion_tokens} tok  {rate:5.1f} tok/s{retry}\n"
        )
        sys.stderr.flush()


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
    }
    if args.command == "run":
        return await run_debate(args.topic, **common)
    transcript = load_transcript(args.transcript)
    return await judge_transcript(transcript, **common)


def _debate(args: argparse.Namespace, argv: list[str]) -> int:
    """``debate run`` and ``debate judge``: run, write result.json and run.json, record."""
    out = Path(args.out)
    try:
        config = load_config(args.config, _overrides(args))
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
        sys.stdout.write(summary(result, str(path)) + "\n")
    return EXIT_OK


def _audit(args: argparse.Namespace) -> int:
    from debate.audit import audit, format_audit

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
        from debate.stats.cli_agreement import agreement_main

        return agreement_main(argv[1:])
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
    return _debate(args, argv)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
