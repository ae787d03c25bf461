r"""Text a user hands in, parsed: nesting and numbers the parsers cannot take, text not Unicode.

The standard parsers fail on some inputs with errors that are not their "not valid JSON"
(or TOML) error: JSON or TOML nested deeper than they recurse raises ``RecursionError``, an
integer of more than :func:`sys.get_int_max_str_digits` digits raises ``ValueError``. Every
reader of a user's file goes through :func:`parse_json` or :func:`parse_toml`, so those
inputs are refused in one line that names the file and the limit, as a syntax error is.

A lone surrogate (``"\ud800"`` in JSON, or a byte of a command-line argument that is not
UTF-8) is a character no UTF-8 text can hold: it passes every check on a ``str`` and breaks
the first time the text is written or hashed. :func:`lone_surrogate` finds one, and
:func:`check_unicode` refuses it naming the field.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from debate.exceptions import ConfigurationError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

NESTING_LIMITS = {"JSON": 990, "TOML": 330}
"""About how deep each parser nests arrays and objects before Python's recursion limit stops
it (measured with the default limit of 1000 frames); no real input comes near either."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
"""A ``\\uD800``-``\\uDFFF`` escape in JSON text: the only way a parsed value can hold a
surrogate (a well-formed pair becomes one character, a lone one stays)."""


class NotUnicodeError(ConfigurationError):
    """Text in one input holds a lone surrogate, which no UTF-8 text can carry.

    A :class:`ConfigurationError` of that input alone: a batch fails its item and runs the
    others, where other bad input found while an item runs stops the batch.
    """


def parse_json(text: str, where: str, *, unicode: bool = True) -> Any:
    r"""``json.loads``, with its failures other than a syntax error refused in one line.

    Args:
        text: The JSON text.
        where: What it is, for the message (``transcript t.json``, ``candidates c.jsonl
            line 3``).
        unicode: Also refuse a string holding a lone surrogate (an unpaired ``\ud800``).

    Raises:
        json.JSONDecodeError: not JSON (the caller words that: it knows what the file is).
        ConfigurationError: nested too deeply, a number with too many digits, or (with
            ``unicode``) text that is not Unicode.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise ConfigurationError(_too_deep(where, "JSON")) from None
    except ValueError as exc:  # the integer digit limit, json's only other ValueError
        raise ConfigurationError(_too_long(where)) from exc
    if unicode and _SURROGATE_ESCAPE.search(text):
        check_unicode(value, where)
    return value


def parse_toml(text: str, where: str) -> dict[str, Any]:
    """``tomllib.loads``, with nesting and number-length failures refused in one line.

    Raises:
        tomllib.TOMLDecodeError: not TOML (the caller words that).
        ConfigurationError: nested too deeply, or a number with too many digits.
    """
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        raise
    except RecursionError:
        raise ConfigurationError(_too_deep(where, "TOML")) from None
    except ValueError as exc:
        raise ConfigurationError(_too_long(where)) from exc


def _too_deep(where: str, kind: str) -> str:
    return (
        f"{where}: nested too deeply to read ({kind} is read to about {NESTING_LIMITS[kind]} "
        "levels of nesting); flatten it"
    )


def _too_long(where: str) -> str:
    return (
        f"{where}: a number has more than {sys.get_int_max_str_digits()} digits; write it "
        "with fewer digits"
    )


def lone_surrogate(value: Any) -> tuple[str, str] | None:
    """The first text in ``value`` holding a lone surrogate: (its dotted path, the text).

    Walks strings, mapping keys and values, lists, tuples and pydantic models' fields; the
    path is ``""`` for ``value`` itself.
    """
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return path, item
            continue
        if isinstance(item, BaseModel):
            item = dict(item)
        if isinstance(item, Mapping):
            children = []
            for key, child in item.items():
                name = f"{path}.{key}" if path else str(key)
                if isinstance(key, str) and _SURROGATE.search(key):
                    return name, key
                children.append((name, child))
            stack.extend(reversed(children))
        elif isinstance(item, list | tuple):
            stack.extend(
                reversed([(f"{path}.{i}" if path else str(i), c) for i, c in enumerate(item)])
            )
    return None


def without_surrogates(value: Any) -> Any:
    """JSON data ``value`` with each lone surrogate replaced by U+FFFD.

    Only to check the rest of an input whose text is refused anyway (a batch item, which
    then fails on its own); never to run it.
    """
    return json.loads(_SURROGATE.sub("\ufffd", json.dumps(value, ensure_ascii=False)))


def check_unicode(value: Any, where: str) -> None:
    """Refuse ``value`` if any text in it holds a lone surrogate, naming the field.

    Raises:
        NotUnicodeError: the message names ``where``, the field and the character.
    """
    found = lone_surrogate(value)
    if found is None:
        return
    path, text = found
    match = _SURROGATE.search(text)
    assert match is not None
    named = ": ".join(part for part in (where, path) if part)
    raise NotUnicodeError(
        f"{named}: not Unicode text (a lone surrogate \\u{ord(match.group()):04x} at "
        f"character {match.start()}); send the text as UTF-8",
        field=path or None,
    )
