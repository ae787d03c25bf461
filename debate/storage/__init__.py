"""Storage: atomic files, the response cache, the run store, `run.json`, the policy file.

SQLite in WAL mode where several processes may share a file. The policy file's reader and
writer are imported on first use (PEP 562; its records import the statistics): every command
that opens a cache or the run store imports this package. The judgments tables' reader and
writer live with the product that reads them, :mod:`debate.judgments`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from debate._faces import lazy_names
from debate.storage._cache import (
    CallCost,
    ResponseCache,
    canonical_json,
    keyed_request,
    request_key,
)
from debate.storage._files import (
    current_umask,
    load_result,
    read_jsonl,
    read_jsonl_records,
    validated,
    write_json_atomic,
)
from debate.storage._pg import SCHEMES, migrate, open_pool
from debate.storage._pgcache import PgResponseCache
from debate.storage._runinfo import recording_run, resolve_seed
from debate.storage._runs import RunStore, default_store_path
from debate.storage._sqlite import write_lock, write_transaction

if TYPE_CHECKING:
    from debate.storage._policy import read_policy, write_policy

_MODULES: dict[str, tuple[str, ...]] = {
    "debate.storage._policy": ("read_policy", "write_policy"),
}
"""Where each lazily imported name lives; the TYPE_CHECKING imports say the same to mypy."""

__all__ = [
    "CallCost",
    "PgResponseCache",
    "ResponseCache",
    "RunStore",
    "SCHEMES",
    "canonical_json",
    "current_umask",
    "default_store_path",
    "keyed_request",
    "load_result",
    "migrate",
    "open_pool",
    "read_jsonl",
    "read_jsonl_records",
    "read_policy",
    "recording_run",
    "request_key",
    "resolve_seed",
    "validated",
    "write_json_atomic",
    "write_lock",
    "write_policy",
    "write_transaction",
]

__getattr__, __dir__ = lazy_names(globals(), _MODULES)
