"""Shipped panel presets: ready panels of judges, mixed across model families.

Judges of one model family share their training and make the same mistakes, so a panel of
one family in four roles repeats one blind spot four times. A preset is a panel config
shipped in ``debate/data/panels/NAME.toml`` (an ordinary config plus a ``[preset]`` table
with its description; see :mod:`debate.records._preset_header`): ``--panel NAME`` runs it,
``debate panels NAME`` prints it to copy and edit, :func:`panel_preset` loads it in Python.

What a preset needs (key variables, servers) is worked out from its endpoints, as the model
pool resolves them (:func:`debate.runtime._pool._endpoint`), so the listing cannot disagree
with where the calls go.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from typing import Any

from debate.exceptions import ConfigurationError
from debate.models import in_process
from debate.records import Frozen, RunConfig, build_config, data_toml, split_header
from debate.runtime._pool import _endpoint

PANELS = "panels"
"""The folder of ``debate/data`` that holds the presets, one ``NAME.toml`` each."""

OPENAI_API = "https://api.openai.com/v1"
"""What an endpoint without ``base_url`` reaches."""

EMBEDDED = "the embedded model in this process (pip install 'debate[local]')"
"""The "server" of a judge on the embedded model."""

FAMILIES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("gpt-", "chatgpt"), "OpenAI GPT"),
    (("o1", "o3", "o4"), "OpenAI o-series"),
    (("claude",), "Anthropic Claude"),
    (("llama", "meta-llama"), "Meta Llama"),
    (("qwen", "qwq"), "Alibaba Qwen"),
    (("mistral", "mixtral", "ministral", "codestral"), "Mistral"),
    (("gemma",), "Google Gemma"),
    (("gemini",), "Google Gemini"),
    (("deepseek",), "DeepSeek"),
    (("phi",), "Microsoft Phi"),
    (("local", "smollm"), "SmolLM2"),
    (("scripted",), "test double"),
)
"""Model-name prefixes and the family they belong to, first match wins; matched on the
name's last path part, lowercased (``meta-llama/Llama-3.3-70B`` is ``llama-3.3-70b``)."""

UNKNOWN_FAMILY = "unknown"


class PresetJudge(Frozen):
    """One judge of a preset, as ``debate panels`` lists it."""

    name: str
    role: str
    model: str
    """The judge's model, or the preset's default model when the judge names none."""
    family: str
    """The model's family (:data:`FAMILIES`), ``unknown`` for a name it does not know."""
    endpoint: str
    """The endpoint it is served at (``default``: the preset's ``model``/``base_url``)."""
    tier: int
    standby: bool


class PresetNeeds(Frozen):
    """What must be set up before a preset runs (its judges and, for ``debate run``, its sides)."""

    env: list[str]
    """Environment variables that must hold keys."""
    servers: list[str]
    """Servers that must be reachable (or the embedded model, which must be installed)."""


class PanelPreset(Frozen):
    """A shipped preset: name, description, judges and needs (``debate panels --json``)."""

    name: str
    description: str
    families: list[str]
    """The judges' model families, each once, in panel order."""
    judges: list[PresetJudge]
    needs: PresetNeeds


def preset_names() -> list[str]:
    """The shipped presets' names, sorted."""
    folder = resources.files("debate.data").joinpath(PANELS)
    return sorted(
        entry.name.removesuffix(".toml")
        for entry in folder.iterdir()
        if entry.name.endswith(".toml")
    )


def _known(name: str, flag: str) -> str:
    """``name`` if a shipped preset has it (never read as a path: ``--config`` is for files).

    Raises:
        ConfigurationError: no preset has that name (the message lists the names).
    """
    names = preset_names()
    if name not in names:
        raise ConfigurationError(
            f"{flag}: unknown panel preset {name!r}; choose from {', '.join(names)} "
            "(debate panels lists them)",
            field=flag if flag.startswith("--") else None,
        )
    return name


def preset_text(name: str, flag: str = "panel") -> str:
    """The preset's TOML file as shipped (comments included), to print or save.

    Raises:
        ConfigurationError: no preset has that name (the message lists the names).
    """
    folder = resources.files("debate.data").joinpath(PANELS)
    return folder.joinpath(f"{_known(name, flag)}.toml").read_text(encoding="utf-8")


def _preset_data(name: str, flag: str) -> dict[str, Any]:
    """The preset's config mapping, ``[preset]`` table included (a fresh copy)."""
    return data_toml(f"{PANELS}/{_known(name, flag)}.toml")


def load_preset(
    name: str,
    overrides: Mapping[str, Any] | None = None,
    *,
    flags: Mapping[str, str] | None = None,
    flag: str = "panel",
) -> RunConfig:
    """A shipped preset as a RunConfig, with ``overrides`` (flags) on top.

    Args:
        name: The preset's name (``debate panels`` lists them).
        overrides: Values that replace the preset's; None values are ignored.
        flags: The flag that sets each override, to report a bad value under its name.
        flag: What chose the preset (``--panel``), named when the name is unknown.

    Raises:
        ConfigurationError: an unknown name, or an override the panel refuses.
    """
    _, data = split_header(_preset_data(name, flag), f"panel preset {name}")
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    data.update(given)
    names = {k: flags[k] for k in given if k in flags} if flags else None
    return build_config(data, f"panel preset {name}", names)


def panel_preset(name: str) -> RunConfig:
    """A shipped panel preset as a :class:`RunConfig`, ready for ``run_debate(config=...)``.

    Change it with ``config.model_copy(update=...)`` or save ``debate panels NAME`` to a
    file, edit it and load that with :func:`debate.load_config`.

    Raises:
        ConfigurationError: no preset has that name (the message lists the names).
    """
    return load_preset(name)


def model_family(model: str) -> str:
    """The family of a model name (:data:`FAMILIES`), or ``unknown``."""
    last = model.lower().rsplit("/", 1)[-1]
    for prefixes, family in FAMILIES:
        if last.startswith(prefixes):
            return family
    return UNKNOWN_FAMILY


def describe_preset(name: str) -> PanelPreset:
    """What ``debate panels`` says about a preset: its judges, families and needs."""
    header, data = split_header(_preset_data(name, "panel"), f"panel preset {name}")
    config = build_config(data, f"panel preset {name}")
    judges = [
        PresetJudge(
            name=j.name,
            role=j.role,
            model=j.model or config.model,
            family=model_family(j.model or config.model),
            endpoint=_endpoint(config, j.endpoint)[0],
            tier=j.tier,
            standby=j.standby,
        )
        for j in config.judges
    ]
    return PanelPreset(
        name=name,
        description=header.description if header is not None else "",
        families=list(dict.fromkeys(j.family for j in judges)),
        judges=judges,
        needs=preset_needs(config),
    )


def preset_needs(config: RunConfig) -> PresetNeeds:
    """The key variables and servers every model of ``config`` (judges, sides) needs."""
    uses = [(j.model, j.endpoint) for j in config.judges]
    uses += [(config.pro_model, config.pro_endpoint), (config.con_model, config.con_endpoint)]
    env: dict[str, None] = {}
    servers: dict[str, None] = {}
    for model, endpoint in uses:
        label, _, base_url, key_env = _endpoint(config, endpoint)
        if in_process(model or config.model, base_url=base_url, endpoint=label):
            servers[EMBEDDED] = None
            continue
        servers[base_url or OPENAI_API] = None
        key = "OPENAI_API_KEY" if key_env is None and base_url is None else key_env
        if key:
            env[key] = None
    return PresetNeeds(env=list(env), servers=list(servers))


def list_presets() -> list[PanelPreset]:
    """Every shipped panel preset, described (name, judges, families, needs), by name."""
    return [describe_preset(name) for name in preset_names()]
