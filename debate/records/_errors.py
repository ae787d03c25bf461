"""How a failure is named for a machine: its kind and the field it is about.

One table and one rule for the CLI's ``--json`` errors, the service's job errors (HTTP) and
the MCP tools' errors, so an integration reads the same ``kind`` and ``field`` whichever
door it came in by. The table of kinds is :data:`debate.exceptions.ERROR_KINDS`.
"""

from __future__ import annotations

import re

from debate.exceptions import ERROR_KINDS, ConfigurationError
from debate.records._config import RunConfig

LEADING_FIELD = re.compile(
    r"(?:argument )?(--[a-z][a-z0-9-]*|[a-z_][a-z0-9_]*(?:\.\w+)*)(?:/-\w)?: "
)
"""The field a message starts with, by the house convention ``field: problem; fix``."""


def error_kind(
    exc: BaseException, kinds: tuple[tuple[type[BaseException], str], ...] = ERROR_KINDS
) -> str:
    """The ``kind`` reported for ``exc``."""
    return next((kind for cls, kind in kinds if isinstance(exc, cls)), "runtime")


def one_line(exc: BaseException) -> str:
    """The error's message on one line (its class name if it has none)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def error_field(
    exc: BaseException,
    message: str,
    named: tuple[type[BaseException], ...] = (ConfigurationError,),
    *,
    any_field: bool = False,
) -> str | None:
    """The field an error of a ``named`` class is about, if it names one.

    Its own ``field``, else the flag or config field its message starts with
    (``--arguments: ...``, ``judges.0.role: ...``, ``config.judges: ...``). A leading word
    counts only when it is a flag or a config field, so a message that starts with a file
    name (``result.json: no such file``) names no field; with ``any_field`` (an MCP tool,
    whose messages start with the argument's name) any leading name counts.
    """
    if not isinstance(exc, named):
        return None
    own = getattr(exc, "field", None)
    if isinstance(own, str):
        return own
    match = LEADING_FIELD.match(message)
    if match is None:
        return None
    name = match.group(1)
    root = name.removeprefix("config.").split(".")[0]
    if any_field or name.startswith("--") or root in RunConfig.model_fields:
        return name
    return None
