"""argparse types for flag values: each refuses a bad value with one line naming the range.

Every number a user can type has a range, so a typo is refused at once (exit 2) rather than
run for hours or read as something else; argparse names the type by the function's
``__name__`` in its "invalid ... value" line.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from debate.exceptions import ConfigurationError
from debate.records import check_seed

MAX_DAYS = 36_500
"""The longest ``--since``: a century of days."""


def at_least(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type for a count no function below checks (``--limit``, say).

    ``high`` bounds it above: every number a user can type has a range, so a typo such as
    ``--bootstrap 1000000000`` is refused at once instead of running for hours.
    """

    def parse(text: str) -> int:
        value = int(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is below {low}; use {low} or more")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"{value} is above {high}; use {low} to {high}")
        return value

    parse.__name__ = "count"  # argparse names the type in "invalid count value"
    return parse


def probability_between(
    low: float, high: float, *, high_included: bool = False
) -> Callable[[str], float]:
    """An argparse type for a share strictly above ``low`` and below (or at) ``high``."""

    def parse(text: str) -> float:
        value = float(text)
        above = value > low
        below = value <= high if high_included else value < high
        if not (math.isfinite(value) and above and below):
            upper = f"at most {high:g}" if high_included else f"below {high:g}"
            raise argparse.ArgumentTypeError(f"{text} is not a number above {low:g} and {upper}")
        return value

    parse.__name__ = "share"
    return parse


def seed(text: str) -> int:
    """An argparse type for ``--seed``: a whole number in the range every backend takes."""
    try:
        return check_seed(int(text), "seed")
    except ConfigurationError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("seed: ")) from exc


def path_text(text: str) -> str:
    """An argparse type for an output path: an empty one is refused, not read as ``.``.

    ``Path("")`` is the current folder, so ``--out ""`` (an unset shell variable, say)
    would write into wherever the command happens to run.
    """
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path; name the folder or file to write")
    return text


path_text.__name__ = "path"  # argparse names the type in "invalid path value"


def finite(text: str) -> float:
    """An argparse type for a number of seconds or days: ``inf`` and ``nan`` are refused."""
    value = float(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text} is not a finite number; give a number")
    return value


def days(text: str) -> float:
    """An argparse type for ``--since``: a finite number of days, 0 to a century."""
    value = finite(text)
    if not 0 <= value <= MAX_DAYS:
        raise argparse.ArgumentTypeError(f"{text} is out of range; use 0 to {MAX_DAYS} days")
    return value


def usd(text: str) -> float:
    """An argparse type for ``--max-cost``: a positive, finite number of US dollars."""
    value = finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not above 0; give US dollars, e.g. 0.50")
    return value


usd.__name__ = "amount"
finite.__name__ = "number"
days.__name__ = "number of days"
seed.__name__ = "seed"
