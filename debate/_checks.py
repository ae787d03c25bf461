"""Checks on user input that every stage makes the same way (importable from any layer)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable


def repeated(values: Iterable[str]) -> list[str]:
    """The values that occur more than once, sorted (ids, names, labels given twice)."""
    return sorted(value for value, n in Counter(values).items() if n > 1)
