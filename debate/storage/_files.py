"""Files a run writes (atomically, so that a reader never sees half of one) and reads."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from debate.exceptions import ConfigurationError
from debate.records import CouncilResult, DebateResult, parse_json, validation_message


def write_json_atomic(path: str | Path, text: str) -> Path:
    """Write a file so that a reader never sees half of it (temp file + rename).

    The file gets the mode any other program's output would (0666 less the umask): mkstemp
    makes its temp file 0600, which would keep a result from the web server or the
    teammate the user's umask lets read it.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fchmod(handle.fileno(), 0o666 & ~current_umask())
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def current_umask() -> int:
    """The process's umask.

    Linux states it in /proc; elsewhere reading it means setting it, so it is set straight
    back (a thread creating a file in between would get 0o077, the safe side).
    """
    try:  # read as bytes, not decoded and split: every file a run writes asks
        with open("/proc/self/status", "rb") as status:
            found = status.read()
        start = found.index(b"\nUmask:") + 7
        return int(found[start : found.index(b"\n", start)], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


M = TypeVar("M", bound=BaseModel)


def read_jsonl(path: str | Path, what: str, *, unicode: bool = True) -> Iterator[tuple[int, Any]]:
    """Each non-blank line of a JSON Lines file, parsed, with its 1-based line number.

    The one JSONL reader: batches, candidates, benchmark items and datasets all fail the
    same way, in one line that names the file, the line and the fix.

    Args:
        path: The file.
        what: What the file is, for the message (``batch file``, ``candidates``...).
        unicode: Refuse a line whose text holds a lone surrogate (see
            :func:`~debate.records._input.parse_json`); a batch leaves that to the item.

    Raises:
        ConfigurationError: the file cannot be read, is not UTF-8, or a line is not JSON
            (or nested too deeply, or holds a number too long or text not Unicode).
    """
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ConfigurationError(
            f"{what} {source}: cannot read it ({reason}); check the path"
        ) from exc
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, parse_json(line, f"{what} {source} line {number}", unicode=unicode)
        except json.JSONDecodeError as exc:
            raise ConfigurationError(
                f"{what} {source} line {number}: not valid JSON ({exc.msg}); "
                "write one JSON object per line"
            ) from exc


def read_jsonl_records(path: str | Path, what: str, model: type[M]) -> list[tuple[int, M]]:
    """Every line of a JSONL file validated as ``model``, before any of them is used.

    Raises:
        ConfigurationError: as :func:`read_jsonl`, or a line that is not a valid ``model``
            (the message names the line and the field).
    """
    return [
        (number, validated(model, data, f"{what} {path} line {number}"))
        for number, data in read_jsonl(path, what)
    ]


def validated(model: type[M], data: Any, where: str) -> M:
    """``data`` validated as ``model``; a ValidationError is one line naming ``where``.

    Raises:
        ConfigurationError: ``data`` is not a valid ``model`` (the message names the field).
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigurationError(validation_message(exc, where), field=field_of(exc)) from exc


def field_of(exc: ValidationError) -> str | None:
    """The dotted path of the first field a validation error is about (None: the whole)."""
    loc = exc.errors()[0]["loc"]
    return ".".join(str(part) for part in loc) or None


RESULT_KINDS: dict[str, type[BaseModel]] = {"debate": DebateResult, "council": CouncilResult}


def _read(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigurationError(
            f"{path}: no such file; give the result.json that `debate run` or `debate judge` "
            "wrote (OUT/result.json)"
        ) from exc
    except IsADirectoryError as exc:
        raise ConfigurationError(
            f"{path} is a folder; give the result file in it ({path / 'result.json'})"
        ) from exc
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ConfigurationError(f"{path}: cannot read it ({reason}); check the path") from exc
    try:
        return parse_json(text, str(path))
    except json.JSONDecodeError as exc:
        raise ConfigurationError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); give "
            "the result.json that `debate run` wrote, unedited"
        ) from exc


def load_result(path: str | Path) -> BaseModel:
    """Read and validate a saved result (``OUT/result.json``).

    Args:
        path: The result file.

    Returns:
        The result, of the type its ``kind`` names (a debate result by default).

    Raises:
        ConfigurationError: The file is missing, unreadable, not JSON, or not a result;
            the message names the problem and the fix.
    """
    source = Path(path)
    data = _read(source)
    if not isinstance(data, dict):
        raise ConfigurationError(
            f"{source}: not a result (expected a JSON object with topic, transcript, decision)"
        )
    kind = data.get("kind", "debate")
    model = RESULT_KINDS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise ConfigurationError(
            f"{source}: no report for results of kind {kind!r} yet; supported: "
            f"{', '.join(RESULT_KINDS)}"
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigurationError(
            validation_message(exc, str(source)) + " (is this a result.json of this version?)",
            field=field_of(exc),
        ) from exc
