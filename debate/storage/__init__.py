"""Storage: atomic files, the response cache, the run store, `run.json`, judgments tables.

SQLite in WAL mode where several processes may share a file. The judgments tables' readers
and writers are imported on first use (PEP 562): every command that opens a cache or the
run store imports this package, and only ``decide`` and ``validity`` read those tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from debate.storage._judgments import (
        parse_scale,
        read_judgment_rows,
        read_judgments,
        table_rows,
        write_judgments,
    )

__all__ = [
    "parse_scale",
    "read_judgment_rows",
    "read_judgments",
    "table_rows",
    "write_judgments",
]


def __getattr__(name: str) -> Any:
    """The judgments tables' functions, from :mod:`debate.storage._judgments` on first use."""
    if name not in __all__:
        raise AttributeError(f"module 'debate.storage' has no attribute {name!r}")
    from debate.storage import _judgments

    value = getattr(_judgments, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names, the ones not imported yet included."""
    return sorted({*globals(), *__all__})
