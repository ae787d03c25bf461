"""Files the user named: reading or writing one, and opening one as a SQLite database.

A file that cannot be read, written or opened is bad input (exit 2), in one line that names
the file and says what to do, never a traceback.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from debate.exceptions import ConfigurationError


@contextmanager
def user_file(path: str | Path, what: str, *, writing: bool = False) -> Iterator[None]:
    """Around the read (or ``writing``, the write) of a file the user named: bad input (exit 2).

    The message says which of the two failed: a write refused as "cannot read it" sent the
    user looking at the wrong file.
    """
    try:
        yield
    except IsADirectoryError as exc:
        if not writing:
            raise ConfigurationError(
                f"{what} {path}: cannot read it ({exc.strerror or exc}); check the path"
            ) from exc
        raise ConfigurationError(
            f"{what} {path}: cannot write it (it is a folder); give the path of a file"
        ) from exc
    except OSError as exc:
        action = "write" if writing else "read"
        raise ConfigurationError(
            f"{what} {path}: cannot {action} it ({exc.strerror or exc}); check the path"
        ) from exc
    except UnicodeDecodeError as exc:
        raise ConfigurationError(
            f"{what} {path}: not UTF-8 text (byte {exc.start}: {exc.reason}); save it as UTF-8"
        ) from exc


@contextmanager
def sqlite_file(lead: str, remedy: str, *, field: str | None = None) -> Iterator[None]:
    """Around opening a SQLite file the user named (a cache, a store): bad input if it fails.

    The line is ``lead (reason); remedy``, ``lead`` naming the flag, the file and what it
    should hold, so every store a command opens is refused in the same form.
    """
    try:
        yield
    except (OSError, sqlite3.Error) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigurationError(f"{lead} ({reason}); {remedy}", field=field) from exc


def refuse_folder(path: Path) -> None:
    """Raise as opening a folder would: SQLite would otherwise say only "unable to open"."""
    if path.is_dir():
        raise IsADirectoryError(21, "it is a folder", str(path))
