"""Exit codes of the ``debate`` command, and ``--fail-on``, which turns an outcome into one.

Exit codes: 0 for any outcome, 1 for a failure at run time, 2 for bad input, 3 for an outcome
``--fail-on`` lists, 130 after Ctrl-C (:mod:`debate._cli.main` says which is which).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable

EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_OUTCOME = 3
"""The decision's outcome is one ``--fail-on`` lists (the result was written all the same)."""

FAILABLE_OUTCOMES = ("irreconcilable", "too_close", "insufficient", "escalate")
"""The outcomes without a winner, which ``--fail-on`` can turn into exit code 3."""


def outcome_list(text: str) -> frozenset[str]:
    """An argparse type for ``--fail-on``: a comma list of outcomes without a winner."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in FAILABLE_OUTCOMES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"{unknown[0] if unknown else text!r} is not an outcome; give a comma list of "
            f"{', '.join(FAILABLE_OUTCOMES)}"
        )
    return frozenset(names)


outcome_list.__name__ = "outcome list"  # argparse names the type in "invalid ... value"


def fail_on_flag(parser: argparse.ArgumentParser) -> None:
    """``--fail-on``, for the commands whose results have a decision (run, judge, batch)."""
    parser.add_argument(
        "--fail-on",
        type=outcome_list,
        default=frozenset(),
        metavar="OUTCOMES",
        help=f"exit {EXIT_OUTCOME} (after writing the result) when the outcome is one of "
        f"these, comma-separated: {', '.join(FAILABLE_OUTCOMES)}",
    )


def outcome_exit(args: argparse.Namespace, outcomes: Iterable[str]) -> int:
    """:data:`EXIT_OUTCOME` when any of ``outcomes`` is one ``--fail-on`` lists, else 0."""
    listed: frozenset[str] = getattr(args, "fail_on", frozenset())
    return EXIT_OUTCOME if any(o in listed for o in outcomes) else EXIT_OK
