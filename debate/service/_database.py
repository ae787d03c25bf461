"""Which database a ``--database`` value names: a SQLite file, or a PostgreSQL URL.

A value is a URL when it starts with a scheme and ``://`` (``postgresql://user@host/db``);
anything else is a file path. Read as a path, a URL became a SQLite file under a folder
named ``postgresql:`` in the working directory, which a second server given the same URL
then shared: the one thing the README warns against. ``postgresql://`` and ``postgres://``
(libpq's two spellings) name the store several replicas share; any other scheme is refused.
No message repeats a URL whole: it may hold a password.
"""

from __future__ import annotations

import re
from pathlib import Path

from debate.exceptions import ConfigurationError
from debate.storage import SCHEMES

DEFAULT_DATABASE = "debate-service.sqlite"
_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def database_target(value: str, field: str = "--database") -> Path | str:
    """The SQLite file (a ``Path``) or the PostgreSQL URL (a ``str``) a value names.

    Raises:
        ConfigurationError: a URL of another scheme, an empty value, or a folder.
    """
    url = _URL.match(value)
    if url is None:
        return sqlite_path(value, field)
    scheme = url.group(1).lower()
    if scheme not in SCHEMES:
        raise ConfigurationError(
            f"{field}: a {scheme}:// URL; give a postgresql:// URL "
            f"(postgresql://user@host:5432/db) or the path of a SQLite file, e.g. "
            f"{DEFAULT_DATABASE}",
            field=field,
        )
    return value


def sqlite_path(value: str, field: str = "--database") -> Path:
    """The SQLite file a ``--database`` value names (a URL is refused here).

    Raises:
        ConfigurationError: a URL, an empty value, or a folder.
    """
    url = _URL.match(value)
    if url is not None:
        raise ConfigurationError(
            f"{field}: a {url.group(1).lower()}:// URL where a SQLite file is needed; give "
            f"the path of a SQLite file, e.g. {DEFAULT_DATABASE}",
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
