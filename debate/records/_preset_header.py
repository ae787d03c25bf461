"""The ``[preset]`` table of a panel config: what a shipped preset says about itself.

A shipped panel preset (``debate/data/panels/NAME.toml``) is an ordinary panel config plus
this table, so that ``debate panels NAME`` can print the file as it is and the printed file
works as a ``--config``: the table is checked here and taken out before the config itself
is validated. Anything a preset needs (key variables, servers) is worked out from its
endpoints rather than written down beside them, where it could disagree.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationError

from debate.exceptions import ConfigurationError
from debate.records._transcript import Frozen

PRESET_TABLE = "preset"
"""The table's name in the TOML file."""


class PresetHeader(Frozen):
    """What a preset says about itself (unknown keys are refused, as everywhere in a config)."""

    description: str = Field(min_length=1)
    """One line: what the panel is and when to use it (``debate panels`` lists it)."""


def split_header(data: dict[str, Any], source: str) -> tuple[PresetHeader | None, dict[str, Any]]:
    """The ``[preset]`` table of a config mapping (None without one), and the rest.

    Raises:
        ConfigurationError: the table is not a table or has a bad or unknown key.
    """
    if PRESET_TABLE not in data:
        return None, data
    rest = {k: v for k, v in data.items() if k != PRESET_TABLE}
    table = data[PRESET_TABLE]
    if not isinstance(table, dict):
        raise ConfigurationError(
            f"{source}.{PRESET_TABLE}: not a table; write [{PRESET_TABLE}] with a description"
        )
    try:
        return PresetHeader.model_validate(table), rest
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join([PRESET_TABLE, *(str(p) for p in first["loc"])])
        raise ConfigurationError(f"{source}.{where}: {first['msg']}") from exc
