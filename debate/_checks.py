"""Checks on user input that every stage makes the same way (importable from any layer)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from debate.exceptions import ConfigurationError


def repeated(values: Iterable[str]) -> list[str]:
    """The values that occur more than once, sorted (ids, names, labels given twice)."""
    return sorted(value for value, n in Counter(values).items() if n > 1)


def check_cap(name: str, value: int | None, most: int, absent: str) -> None:
    """A cap (a token budget, a rate limit): none, or a whole number from 1 to ``most``.

    Raises:
        ConfigurationError: out of range; the message says what leaving it out means
            (``absent``: "no cap", "no limit").
    """
    if value is not None and not 1 <= value <= most:
        raise ConfigurationError(
            f"{name}: {value} is out of range; use 1 to {most} (leave it out for {absent})"
        )
