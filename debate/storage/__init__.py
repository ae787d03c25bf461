"""Storage: atomic files, the response cache, the run store, `run.json`, the policy file.

SQLite in WAL mode where several processes may share a file. The policy file's reader and
writer are imported on first use (PEP 562; its records import the statistics): every command
that opens a cache or the run store imports this package. The judgments tables' reader and
writer live with the product that reads them, :mod:`debate.judgments`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from debate.storage._policy import read_policy, write_policy

_MODULES: dict[str, tuple[str, ...]] = {
    "debate.storage._policy": ("read_policy", "write_policy"),
}
"""Where each lazily imported name lives; the TYPE_CHECKING imports say the same to mypy."""
_LAZY = {name: module for module, names in _MODULES.items() for name in names}

__all__ = [
    "read_policy",
    "write_policy",
]


def __getattr__(name: str) -> Any:
    """The policy file's functions, imported on first use."""
    if name not in _LAZY:
        raise AttributeError(f"module 'debate.storage' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names, the ones not imported yet included."""
    return sorted({*globals(), *__all__})
