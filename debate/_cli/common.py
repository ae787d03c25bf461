"""Pieces shared by the ``debate`` subcommands: flags, config overrides, progress lines."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from debate.exceptions import ConfigurationError
from debate.records._config import default_judges
from debate.runtime._events import Event, StepFinished

EXIT_OK, EXIT_RUNTIME, EXIT_USAGE = 0, 1, 2


class Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in one line with exit code 2."""

    def error(self, message: str) -> Any:
        """Exit 2 with a one-line message."""
        self.exit(EXIT_USAGE, f"error: {message} (see {self.prog} --help)\n")


def model_flags(parser: argparse.ArgumentParser) -> None:
    """Flags that choose models, the panel, call limits and outputs."""
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
    panel.add_argument(
        "--topic-classifier",
        choices=["keywords", "model"],
        help="detect the topic type from keywords (default) or with one call to a judge's model",
    )
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
    store_flags(out)


def store_flags(group: argparse._ArgumentGroup) -> None:
    """``--store`` and ``--no-store``."""
    group.add_argument(
        "--store", metavar="PATH", help="run store (default: DEBATE_STORE or the user data dir)"
    )
    group.add_argument("--no-store", action="store_true", help="do not record the run")


def overrides(args: argparse.Namespace) -> dict[str, Any]:
    """Config values set by flags (None where a flag was not given)."""
    values: dict[str, Any] = {
        "model": args.model,
        "base_url": args.base_url,
        "templates": args.templates,
        "topics": args.topics,
        "topic_type": args.topic_type,
        "topic_classifier": args.topic_classifier,
        "timeout": args.timeout,
        "deadline": args.deadline,
        "max_retries": args.max_retries,
        "presentation": getattr(args, "presentation", None),
        "swap": True if getattr(args, "swap", False) else None,
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
        busy = event.model_seconds or event.elapsed
        rate = event.completion_tokens / busy if busy > 0 else 0.0
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
