"""The ``debate`` command: builds the parser, then runs the chosen command through one funnel.

Exit codes: 0 for any outcome (a split is a result, not an error); 2 for a usage or
configuration error (a flag, a config or input file, a missing API key); 1 for a failure at
run time (a provider, a model's output, the deadline) or a batch with a failed item; 3 when
the outcome is one ``--fail-on`` lists (the result is written first); 130 after Ctrl-C.

With ``--json`` a failure also prints one JSON object on stdout,
``{"error": {"kind": ..., "message": ..., "field": ...}}`` (``field`` only when the error
names one), so a program reads the same stream for a result and for a failure.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
import time
from collections.abc import Sequence
from contextlib import nullcontext
from types import ModuleType

from debate._cli.exits import EXIT_INTERRUPTED, EXIT_RUNTIME, EXIT_USAGE
from debate._cli.outputs import close_caches
from debate._cli.parsing import Parser, UsageExit
from debate._gc import collector_held, freeze_survivors
from debate._version import VERSION_LINE
from debate.exceptions import (
    ConfigurationError,
    DebateError,
)
from debate.records import ERROR_KINDS as SHARED_KINDS
from debate.records import error_field as shared_error_field
from debate.records import error_kind as shared_error_kind
from debate.records import lone_surrogate

NAMES = (
    "run",
    "judge",
    "council",
    "leaderboard",
    "batch",
    "merge",
    "calibrate",
    "decide",
    "validity",
    "example",
    "panels",
    "audit",
    "report",
    "stability",
    "agreement",
    "schema",
    "serve",
    "mcp",
    "warm",
)
"""One module per subcommand (``debate._cli.NAME``), in the order ``debate --help`` lists them."""


def commands(only: str | None = None) -> list[ModuleType]:
    """The subcommands' modules: every one, or only ``only`` when it names one.

    A command line that starts with a command's name is parsed by that command's parser
    alone (its flags, checks and messages are its own), so ``debate run`` imports ``run``'s
    module, not every command's and what those import (the batch, the judgments' tables).
    """
    chosen = (only,) if only in NAMES else NAMES
    return [importlib.import_module(f"debate._cli.{name}") for name in chosen]


ERROR_KINDS: tuple[tuple[type[BaseException], str], ...] = (
    *SHARED_KINDS,
    (KeyboardInterrupt, "interrupted"),
)
"""The ``kind`` of a ``--json`` error, by exception class (first match; argparse's refusals
are ``usage``): the service's kinds, and ``interrupted``."""

RESUME = (
    "completed model calls are kept in the response cache; run the same command again to continue"
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser of the ``debate`` command; each module registers its subcommand.

    ``only``: the command a command line starts with, registered alone (:func:`commands`).
    """
    parser = Parser(
        prog="debate", description="Structured LLM debates, judged by a calibrated panel."
    )
    parser.add_argument("--version", action="version", version=VERSION_LINE)
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for module in commands(only):
        module.add_parser(subparsers)
    return parser


def dispatch(args: argparse.Namespace) -> int:
    """Run the chosen command; the one place a failure becomes a line on stderr and an exit code.

    Commands raise rather than print their errors, so every command fails the same way:
    no traceback, one line, and the exit code says whose move it is (2: fix the input;
    1: the run failed, retry or look at the provider; 130: stopped by Ctrl-C). run.json,
    where a command writes one, has already been marked by
    :func:`debate.storage._runinfo.recording_run` when the exception gets here.
    """
    as_json = getattr(args, "json", False) is True
    try:
        code: int = args.func(args)
    except ConfigurationError as exc:
        return _fail(EXIT_USAGE, "error", exc, args)
    except (DebateError, OSError) as exc:
        return _fail(EXIT_RUNTIME, "failed", exc, args)
    except KeyboardInterrupt as exc:
        cached = getattr(args, "no_cache", True) is False  # a command with a response cache
        message = RESUME if cached else ""
        if _jsonl(args):
            sys.stderr.write(_error_event("interrupted", message or "interrupted", None) + "\n")
        else:
            sys.stderr.write(f"interrupted: {message}\n" if message else "interrupted\n")
        if as_json:
            _json_error("interrupted", message or "interrupted", error_field(exc, message))
        return EXIT_INTERRUPTED
    return code


def _jsonl(args: argparse.Namespace) -> bool:
    """Whether stderr is a stream of JSON events (``--progress jsonl``, not ``--quiet``)."""
    return getattr(args, "progress", None) == "jsonl"


def _fail(code: int, label: str, exc: BaseException, args: argparse.Namespace) -> int:
    """Write ``label: message`` as one line (a message with line breaks is joined).

    With ``--json``, also the error object on stdout: the kind, the same message, and the
    field when the error names one. With ``--progress jsonl`` the line on stderr is itself
    an event (``{"type": "error", ...}``), so that stream stays JSON to its end.
    """
    message = " ".join(str(exc).split("\n")).strip() or type(exc).__name__
    kind, field = error_kind(exc), error_field(exc, message)
    if _jsonl(args):
        sys.stderr.write(_error_event(kind, message, field) + "\n")
    else:
        sys.stderr.write(f"{label}: {message}\n")
    if getattr(args, "json", False) is True:
        _json_error(kind, message, field)
    return code


def _error(kind: str, message: str, field: str | None) -> dict[str, str]:
    """The error object of ``--json`` and of the jsonl ``error`` event (``field`` if known)."""
    error = {"kind": kind, "message": message}
    if field is not None:
        error["field"] = field
    return error


def _error_event(kind: str, message: str, field: str | None) -> str:
    return json.dumps(
        {"type": "error", "ts": round(time.time(), 3), **_error(kind, message, field)}
    )


class JsonLogFormatter(logging.Formatter):
    """Log records as ``{"type": "log", ...}`` events, for ``--progress jsonl``."""

    def format(self, record: logging.LogRecord) -> str:
        """One JSON line: level, logger and message."""
        return json.dumps(
            {
                "type": "log",
                "ts": round(record.created, 3),
                "level": record.levelname.lower(),
                "logger": record.name,
                "message": record.getMessage(),
            }
        )


def _json_error(kind: str, message: str, field: str | None) -> None:
    sys.stdout.write(json.dumps({"error": _error(kind, message, field)}) + "\n")


def error_kind(exc: BaseException) -> str:
    """The ``kind`` a ``--json`` error reports for ``exc``."""
    return shared_error_kind(exc, ERROR_KINDS)


def error_field(exc: BaseException, message: str) -> str | None:
    """The field a configuration error or a refused flag is about, if it names one."""
    return shared_error_field(exc, message, (ConfigurationError, UsageExit))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``debate`` command (``argv``: a caller's own command line).

    Without ``argv`` this is the process's command, which exits next: the collector's
    objects are frozen first (:func:`debate._gc.freeze_survivors`), sparing the interpreter's
    shutdown a walk over all of them. The response caches the command opened are closed
    first (for any caller): the run store and result files are closed by the command itself.
    A caller that passes ``argv`` keeps running and keeps its collector.

    The process's own command of bounded work (:data:`BOUNDED`) also runs with the cyclic
    collector held (:func:`debate._gc.collector_held`): what a debate leaves in reference
    cycles is small and goes with the process. The time both save is on the performance page.
    """
    own = argv is None
    bounded = own and _command(sys.argv[1:]) in BOUNDED
    held = collector_held(restore=False) if bounded else nullcontext()
    with held:
        try:
            return _main(list(sys.argv[1:] if argv is None else argv))
        finally:
            close_caches()
            if own:
                freeze_survivors()


BOUNDED = ("run", "judge", "council")
"""Commands that do one debate or council and end: no collector in their own process."""


def _command(arguments: list[str]) -> str | None:
    """The subcommand named on a command line (its first word that is not a flag)."""
    return next((word for word in arguments if not word.startswith("-")), None)


def _main(arguments: list[str]) -> int:
    refused = not_utf8(arguments)
    if refused is not None:  # before anything is parsed, created or recorded
        return _fail(EXIT_USAGE, "error", refused, argparse.Namespace(json="--json" in arguments))
    try:
        # argv rides along for the commands that record it in run.json
        parser = build_parser(arguments[0] if arguments else None)  # see commands()
        args = parser.parse_args(arguments, argparse.Namespace(argv=arguments))
    except UsageExit as exc:  # argparse refused a flag (the line is on stderr already)
        if "--json" in arguments:
            _json_error("usage", exc.message, error_field(exc, exc.message))
        return EXIT_USAGE
    except SystemExit as exc:  # --help, --version
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    handler = logging.StreamHandler(sys.stderr)
    if _jsonl(args):  # the warnings join the event stream instead of breaking it
        handler.setFormatter(JsonLogFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(
        level=logging.ERROR if getattr(args, "quiet", False) else logging.WARNING,
        handlers=[handler],
    )
    return dispatch(args)


def not_utf8(arguments: list[str]) -> ConfigurationError | None:
    """The error for the first argument that is not UTF-8 text, if one is not.

    Python hands a byte that is not UTF-8 over as a lone surrogate (``surrogateescape``),
    which nothing can write: it would fail the first file or record written with it (a
    result, run.json), after the output folder was made. The message shows the bytes.
    """
    for index, argument in enumerate(arguments):
        found = lone_surrogate(argument)
        if found is None:
            continue
        flag, _, value = argument.partition("=")
        if not (argument.startswith("--") and value):
            previous = arguments[index - 1] if index else ""
            flag = previous if previous.startswith("--") else f"argument {index + 1}"
            value = argument
        try:
            shown = value.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            shown = value.encode("utf-8", "backslashreplace")
        return ConfigurationError(
            f"{flag}: {str(shown)[1:]} is not UTF-8 text; give it in UTF-8", field=flag
        )
    return None


if __name__ == "__main__":  # pragma: no cover - `python -m debate._cli.main`
    raise SystemExit(main())
