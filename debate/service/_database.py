"""Which database a ``--database`` value names: this build serves SQLite files only.

A value is a URL when it starts with a scheme and ``://`` (``postgresql://user@host/db``);
anything else is a file path. Read as a path, a URL became a SQLite file under a folder
named ``postgresql:`` in the working directory, which a second server given the same URL
then shared: the one thing the README warns against. The check is one function so that
the store for several replicas (PostgreSQL, not built yet) adds its scheme here.
"""

from __future__ import annotations

import re
from pathlib import Path

from debate.exceptions import ConfigurationError

DEFAULT_DATABASE = "debate-service.sqlite"
_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def sqlite_path(value: str, field: str = "--database") -> Path:
    """The SQLite file a ``--database`` value names.

    The message never repeats a URL: it may hold a password.

    Raises:
        ConfigurationError: a URL (no scheme is served yet), an empty value, or a folder.
    """
    url = _URL.match(value)
    if url is not None:
        scheme = url.group(1).lower()
        which = "PostgreSQL is" if scheme.startswith("postgres") else f"{scheme}:// is"
        raise ConfigurationError(
            f"{field}: a {scheme}:// URL; this build serves SQLite paths only ({which} not "
            f"built yet); give the path of a SQLite file, e.g. {DEFAULT_DATABASE}",
            field=field,
        )
    if not value.strip():
        raise ConfigurationError(
            f"{field}: an empty path; give the path of a SQLite file, e.g. {DEFAULT_DATABASE}",
            field=field,
        )
    path = Path(value)
    if path.is_dir():
        raise ConfigurationError(
            f"{field}: {value} is a folder; give the path of a SQLite file, e.g. "
            f"{path / DEFAULT_DATABASE}",
            field=field,
        )
    return path
