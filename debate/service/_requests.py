"""What a client's request may change, checked: the one-line errors of bad input.

The MCP tools (and any other front end of the service) take a client's arguments through the
service's request models and apply them on top of the server's config here, so a bad value
is one line naming the argument, as the CLI names a flag, and a client can change only what
:class:`~debate.service._models.PanelOverrides` allows.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from debate.exceptions import ConfigurationError
from debate.records import (
    JudgeSpec,
    RunConfig,
    build_config,
    default_judges,
    validation_message,
)
from debate.service._models import PanelOverrides

M = TypeVar("M", bound=BaseModel)


def changes_panel(overrides: PanelOverrides) -> bool:
    """Whether ``overrides`` change the server's panel (a seed alone does not)."""
    changed = (overrides.judges, overrides.arguments, overrides.rounds, overrides.thresholds)
    return any(value is not None for value in changed)


def with_overrides(config: RunConfig, overrides: PanelOverrides, *, prefix: str = "") -> RunConfig:
    """The server's config with what the client may change, checked by RunConfig.

    A role the server's config defines keeps its model and endpoint; any other must be a
    built-in role. A bad value is reported under the argument that set it: ``judges`` for
    an MCP tool, ``config.judges`` (``prefix="config."``) for an HTTP body.

    Raises:
        ConfigurationError: an unknown role or a value out of range, naming the field.
    """
    data = config.model_dump()
    names: dict[str, str] = {}
    if overrides.judges is not None:
        data["judges"] = [j.model_dump() for j in _judges(config, overrides.judges, prefix)]
        names["judges"] = prefix + "judges"
    for name in ("arguments", "rounds"):
        if (value := getattr(overrides, name)) is not None:
            data[name], names[name] = value, prefix + name
    if overrides.thresholds is not None:
        data["thresholds"] = {**data["thresholds"], **overrides.thresholds}
        names["thresholds"] = prefix + "thresholds"
    return build_config(data, "config", names)


def _judges(config: RunConfig, roles: list[str], prefix: str) -> list[JudgeSpec]:
    field = prefix + "judges"
    wanted = [r.strip() for r in roles if r.strip()]
    if not wanted:
        raise ConfigurationError(f"{field}: an empty list; name at least one role", field=field)
    own = {j.name: j for j in config.judges} | {j.role: j for j in config.judges}
    try:
        return [own[r] if r in own else default_judges([r])[0] for r in wanted]
    except ConfigurationError as exc:
        raise ConfigurationError(str(exc).replace("--judges", field, 1), field=field) from exc


def checked(model: type[M], **values: Any) -> M:
    """``model`` validated from the tool's arguments; a problem is a one-line error."""
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise ConfigurationError(one_line(exc, model)) from exc


def panel_overrides(**values: Any) -> PanelOverrides:
    """What the client changes of the panel, checked first so its errors name the argument."""
    return checked(PanelOverrides, **values)


def one_line(exc: ValidationError, bounds: type[BaseModel] | None = None) -> str:
    """The first problem, named by the tool argument it is about (``arguments: ...``)."""
    loc = exc.errors()[0]["loc"]
    names = {str(loc[0]): str(loc[0])} if loc else None
    return validation_message(exc, "arguments", names, bounds)
