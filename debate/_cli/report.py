"""``debate report RESULT.json [--out DIR]``: write the reports of a saved result."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from debate._cli.common import EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, Parser
from debate.exceptions import ConfigurationError
from debate.report._dispatch import write_report
from debate.storage._files import load_result

logger = logging.getLogger(__name__)

"""Result types by their ``kind`` key (a debate result has none)."""


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
