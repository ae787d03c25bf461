"""Storage: atomic files, the response cache, the run store, `run.json`, judgments tables.

SQLite in WAL mode where several processes may share a file.
"""

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
