"""``debate report RESULT.json [--out DIR]``: write the reports of a saved result."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from debate.cli_common import EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, Parser
from debate.config import validation_message
from debate.council_schema import CouncilResult
from debate.exceptions import ConfigurationError
from debate.report._dispatch import write_report
from debate.result import DebateResult

logger = logging.getLogger(__name__)

RESULT_KINDS: dict[str, type[BaseModel]] = {"debate": DebateResult, "council": CouncilResult}
"""Result types by their ``kind`` key (a debate result has none)."""


def _read(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigurationError(
            f"{path}: no such file; give the result.json that `debate run` or `debate judge` "
            "wrote (OUT/result.json)"
        ) from exc
    except IsADirectoryError as exc:
        raise ConfigurationError(
            f"{path} is a folder; give the result file in it ({path / 'result.json'})"
        ) from exc
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ConfigurationError(f"{path}: cannot read it ({reason}); check the path") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); give "
            "the result.json that `debate run` wrote, unedited"
        ) from exc


def load_result(path: str | Path) -> BaseModel:
    """Read and validate a saved result (``OUT/result.json``).

    Args:
        path: The result file.

    Returns:
        The result, of the type its ``kind`` names (a debate result by default).

    Raises:
        ConfigurationError: The file is missing, unreadable, not JSON, or not a result;
            the message names the problem and the fix.
    """
    source = Path(path)
    data = _read(source)
    if not isinstance(data, dict):
        raise ConfigurationError(
            f"{source}: not a result (expected a JSON object with topic, transcript, decision)"
        )
    kind = data.get("kind", "debate")
    model = RESULT_KINDS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise ConfigurationError(
            f"{source}: no report for results of kind {kind!r} yet; supported: "
            f"{', '.join(RESULT_KINDS)}"
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigurationError(
            validation_message(exc, str(source)) + " (is this a result.json of this version?)"
        ) from exc


def _parser() -> Parser:
    parser = Parser(
        prog="debate report",
        description="Write report.md and a self-contained report.html for a saved result.",
    )
    parser.add_argument("result", metavar="RESULT.json", help="OUT/result.json of a run")
    parser.add_argument(
        "--out", metavar="DIR", help="where the reports go (default: the result's folder)"
    )
    return parser


def report_main(argv: list[str] | None = None) -> int:
    """Entry point of ``debate report``.

    Args:
        argv: The arguments after ``report`` (default: ``sys.argv[1:]``).

    Returns:
        0 with the two paths on stdout; 2 for a usage error or a missing or invalid result
        file (one ``error:`` line on stderr); 1 when the reports cannot be written.
    """
    try:
        args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:  # argparse: usage errors and --help
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    try:
        result = load_result(args.result)
    except ConfigurationError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_USAGE
    out = Path(args.out) if args.out else Path(args.result).parent
    try:
        paths = write_report(result, out)
    except OSError as exc:
        sys.stderr.write(
            f"error: cannot write the reports to {out} ({exc.strerror or exc}); "
            "choose another folder with --out\n"
        )
        return EXIT_RUNTIME
    logger.info("wrote %s and %s", *paths)
    sys.stdout.write(f"{paths[0]}\n{paths[1]}\n")
    return EXIT_OK
