"""The policy file on disk: written atomically, read back with one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from debate.exceptions import ConfigurationError
from debate.records import POLICY_FORMAT, Policy, validation_message
from debate.storage._files import field_of, write_json_atomic

MAKE_ONE = "`debate validity TABLE --labels L --target-agreement T --risk R`"
"""The command that writes a policy file, for every message about a file that is not one."""


def write_policy(path: str | Path, policy: Policy) -> Path:
    """Write a policy file (JSON, atomically: a reader never sees half of one).

    Args:
        path: Where to write; its folder is created if missing.
        policy: The policy.

    Returns:
        The path written.
    """
    return write_json_atomic(path, policy.model_dump_json(indent=2) + "\n")


def read_policy(path: str | Path) -> Policy:
    """Read and validate a policy file.

    Args:
        path: The file ``debate validity`` wrote.

    Returns:
        The policy.

    Raises:
        ConfigurationError: one line naming the file and the fix, when the file is missing
            or unreadable, is not JSON, is not a policy of this format version, or has an
            invalid field (named, e.g. ``tiers.0.threshold``).
    """
    source = Path(path)
    data = _load(source)
    if not isinstance(data, dict) or "format" not in data:
        raise ConfigurationError(
            f"policy {source}: not a policy file (no format field); write one with {MAKE_ONE}",
            field="--policy",
        )
    given = data["format"]
    if given != POLICY_FORMAT:
        if isinstance(given, str) and given.startswith("debate-policy/"):
            problem = f"format {given} is not one this version reads ({POLICY_FORMAT})"
        else:
            problem = f"format {given!r} is not a policy format ({POLICY_FORMAT})"
        raise ConfigurationError(
            f"policy {source}: {problem}; write it again with this version's {MAKE_ONE}",
            field="--policy",
        )
    try:
        return Policy.model_validate(data)
    except ValidationError as exc:
        raise ConfigurationError(
            validation_message(exc, f"policy {source}")
            + f"; write the policy again with {MAKE_ONE} rather than editing it",
            field=field_of(exc),
        ) from exc


def _load(source: Path) -> Any:
    try:
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigurationError(
            f"policy {source}: no such file; check the path, or write one with {MAKE_ONE}",
            field="--policy",
        ) from exc
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ConfigurationError(
            f"policy {source}: cannot read it ({reason}); check the path", field="--policy"
        ) from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(
            f"policy {source}: not valid JSON (line {exc.lineno}, column {exc.colno}: "
            f"{exc.msg}); give the policy file as written, or write one with {MAKE_ONE}",
            field="--policy",
        ) from exc
