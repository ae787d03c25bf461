"""The ``debate`` command: builds the parser, then runs the chosen command through one funnel.

Exit codes: 0 for any outcome (a split is a result, not an error); 2 for a usage or
configuration error (a flag, a config or input file, a missing API key); 1 for a failure at
run time (a provider, a model's output, the deadline); 130 after Ctrl-C.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from debate._cli import (
    agreement,
    audit,
    batch,
    calibrate,
    council,
    judge,
    leaderboard,
    report,
    run,
)
from debate._cli.common import EXIT_INTERRUPTED, EXIT_RUNTIME, EXIT_USAGE, Parser
from debate._version import __version__
from debate.exceptions import ConfigurationError, DebateError

COMMANDS = (run, judge, council, leaderboard, batch, calibrate, audit, report, agreement)
"""One module per subcommand, in the order ``debate --help`` lists them."""

RESUME = (
    "completed model calls are kept in the response cache; run the same command again to continue"
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``debate`` command; each module registers its subcommand."""
    parser = Parser(
        prog="debate", description="Structured LLM debates, judged by a calibrated panel."
    )
    parser.add_argument("--version", action="version", version=f"debate {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for module in COMMANDS:
        module.add_parser(commands)
    return parser


def dispatch(args: argparse.Namespace) -> int:
    """Run the chosen command; the one place a failure becomes a line on stderr and an exit code.

    Commands raise rather than print their errors, so every command fails the same way:
    no traceback, one line, and the exit code says whose move it is (2: fix the input;
    1: the run failed, retry or look at the provider; 130: stopped by Ctrl-C). run.json,
    where a command writes one, has already been marked by
    :func:`debate.storage._runinfo.recording_run` when the exception gets here.
    """
    try:
        code: int = args.func(args)
    except ConfigurationError as exc:
        return _fail(EXIT_USAGE, "error", exc)
    except (DebateError, OSError) as exc:
        return _fail(EXIT_RUNTIME, "failed", exc)
    except KeyboardInterrupt:
        cached = getattr(args, "no_cache", True) is False  # a command with a response cache
        sys.stderr.write(f"interrupted: {RESUME}\n" if cached else "interrupted\n")
        return EXIT_INTERRUPTED
    return code


def _fail(code: int, label: str, exc: BaseException) -> int:
    """Write ``label: message`` as one line (a message with line breaks is joined)."""
    message = " ".join(str(exc).split("\n")).strip() or type(exc).__name__
    sys.stderr.write(f"{label}: {message}\n")
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``debate`` command."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        # argv rides along for the commands that record it in run.json
        args = build_parser().parse_args(arguments, argparse.Namespace(argv=arguments))
    except SystemExit as exc:  # argparse: usage errors, --help, --version
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    logging.basicConfig(
        level=logging.ERROR if getattr(args, "quiet", False) else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    return dispatch(args)


if __name__ == "__main__":  # pragma: no cover - `python -m debate._cli.main`
    raise SystemExit(main())
