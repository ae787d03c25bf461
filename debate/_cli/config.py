"""The run's config from the flags: ``--config`` or ``--panel``, with the flags on top.

Also the flags that set it (the models, the panel, how judges read a debate), so a flag and
the config field it sets are named together (:data:`CONFIG_FLAGS`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from debate._cli.decision import decision_flags, with_decision_flags
from debate._cli.values import seed
from debate.exceptions import ConfigurationError
from debate.panel import TopicProfiles
from debate.records import RunConfig, default_judges, load_config
from debate.runtime import PromptRenderer, load_preset

CONFIG_FLAGS = {
    field: "--" + field.replace("_", "-")
    for field in (
        "model",
        "base_url",
        "api_key_env",
        "templates",
        "topics",
        "topic_type",
        "topic_classifier",
        "timeout",
        "deadline",
        "max_retries",
        "presentation",
        "swap",
        "samples",
        "judges",
        "arguments",
        "rounds",
    )
} | {"deliberation": "--deliberate"}
"""RunConfig fields a flag sets, and the flag: a bad value is reported under the flag's name,
while RunConfig alone decides what a good value is."""

MODEL_FLAGS = {field: CONFIG_FLAGS[field] for field in ("model", "base_url", "api_key_env")}
"""The config fields the model flags set (``serve``, ``mcp`` and ``stability`` take no
others), and the flag a bad value is reported under."""


MODEL_HELP = {
    "--model": "model for debaters and judges: 'local' (embedded, default), 'scripted' "
    "(offline placeholder) or a model name served at --base-url / by OpenAI",
    "--base-url": "OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1",
    "--api-key-env": "environment variable holding the key of --base-url's server ('' for a "
    "server without a key); default OPENAI_API_KEY, for OpenAI's API only",
    "--model-path": "run this GGUF file in-process",
}
"""The model flags' help as ``debate run`` gives it; a command may word one for itself."""

MODEL_METAVARS = {"--api-key-env": "NAME", "--model-path": "FILE.gguf"}
"""The model flags that name their value; the others show argparse's own (``MODEL``)."""


def model_choice_flags(
    group: argparse._ArgumentGroup | argparse.ArgumentParser, *, path: bool = True, **help: str
) -> None:
    """``--model``, ``--base-url``, ``--api-key-env`` and (unless not ``path``) ``--model-path``.

    ``help`` replaces a flag's help text, by its field (``base_url="..."``): every command
    that picks models takes the same flags, checked by :func:`check_model_flags`.
    """
    for flag, text in MODEL_HELP.items():
        if flag == "--model-path" and not path:
            continue
        field = flag.removeprefix("--").replace("-", "_")
        group.add_argument(flag, metavar=MODEL_METAVARS.get(flag), help=help.get(field, text))


def panel_flags(parser: argparse.ArgumentParser, debate_panel: bool) -> None:
    """The panel group: its config, judges, templates and seed (and how judges read a debate)."""
    panel = parser.add_argument_group("panel")
    config_flags(panel)
    panel.add_argument(
        "--judges", metavar="LIST", help="comma-separated roles, e.g. technical,risk"
    )
    panel.add_argument(
        "--templates", metavar="DIR", help="folder of templates overriding the shipped ones"
    )
    panel.add_argument(
        "--seed", type=seed, help="sampling seed, 0 to 2**32-1 (recorded in the result)"
    )
    if debate_panel:
        reading_flags(panel)
        decision_flags(panel)


def config_flags(group: argparse._ArgumentGroup) -> None:
    """``--config FILE`` and ``--panel NAME``: the panel from a file or a shipped preset."""
    group.add_argument("--config", metavar="FILE", help="panel config TOML")
    group.add_argument(
        "--panel",
        metavar="NAME",
        help="a shipped panel preset as the config, e.g. cross-family (debate panels lists "
        "them); not with --config",
    )


def panel_config(
    args: argparse.Namespace, given: dict[str, Any], flags: dict[str, str]
) -> RunConfig:
    """``--config`` or ``--panel`` (never both), with the flags' values ``given`` on top.

    Both at once is refused rather than merged: which of the two would win for a judge
    both name is a rule nobody should have to remember. Editing a preset is saving it
    (``debate panels NAME``) and passing the file as ``--config``.
    """
    panel = getattr(args, "panel", None)
    if panel is None:
        return load_config(args.config, given, flags=flags)
    if args.config is not None:
        raise ConfigurationError(
            f"--panel: give --panel {panel} or --config {args.config}, not both; to change "
            f"the preset, save it (debate panels {panel} > panel.toml), edit it and pass "
            "--config panel.toml",
            field="--panel",
        )
    return load_preset(panel, given, flags=flags, flag="--panel")


def reading_flags(panel: argparse._ArgumentGroup) -> None:
    """How the judges read a debate: its topic type and the order and sides they read."""
    panel.add_argument(
        "--topics", metavar="FILE", help="topic profile TOML replacing the shipped one"
    )
    panel.add_argument("--topic-type", help="set the topic type instead of detecting it")
    panel.add_argument(
        "--topic-classifier",
        choices=["keywords", "model"],
        help="detect the topic type from keywords (default) or with one call to a judge's model",
    )
    panel.add_argument(
        "--presentation",
        choices=["counterbalanced", "fixed"],
        help="per-judge reading order (default counterbalanced)",
    )
    panel.add_argument("--swap", action="store_true", help="every judge reads twice, sides swapped")
    panel.add_argument(
        "--samples",
        type=int,
        metavar="K",
        help="readings per judge, each in another order with another seed (default 1)",
    )


def deliberate_flag(parser: argparse.ArgumentParser) -> None:
    """``--deliberate``: judges see each other's reasoning on split arguments, revise once.

    On ``run`` and ``judge`` (one debate, whose result shows the movement); a config's
    ``[deliberation] rounds = 1`` does the same anywhere a config is read.
    """
    parser.add_argument(
        "--deliberate",
        dest="deliberation",
        action="store_true",
        help="after scoring, each judge sees the others' scores and notes on the arguments "
        "the panel split on and may revise once ([deliberation] rounds = 1)",
    )


def overrides(args: argparse.Namespace) -> dict[str, Any]:
    """Config values set by flags (None where a flag was not given); RunConfig checks them."""
    values: dict[str, Any] = {
        field: getattr(args, field, None) for field in CONFIG_FLAGS if field != "judges"
    }
    values["swap"] = values["swap"] or None  # an absent --swap keeps the config's
    # --deliberate is one round; an absent flag keeps the config's [deliberation]
    values["deliberation"] = {"rounds": 1} if values["deliberation"] else None
    if args.judges is not None:
        roles = [r.strip() for r in args.judges.split(",") if r.strip()]
        values["judges"] = [j.model_dump() for j in default_judges(roles)]
    check_model_flags(args)
    return values


def check_model_flags(args: argparse.Namespace) -> None:
    """``--base-url`` comes with ``--model``; ``--model-path`` names a file, without a server.

    ``serve``, ``mcp`` and ``stability`` check their model flags here too, so a flag is
    refused in the same words everywhere.
    """
    if args.model is None and args.base_url is not None:
        raise ConfigurationError("--model: name the model served at --base-url")
    if getattr(args, "model_path", None) is None:  # a command without the flag (stability)
        return
    if args.base_url is not None:
        raise ConfigurationError(
            "--model-path: runs a GGUF file in-process, so --base-url would ignore it; "
            "give one of the two"
        )
    if not Path(args.model_path).is_file():
        raise ConfigurationError(
            f"--model-path: {args.model_path} is not a file; give the path of a .gguf model"
        )


def run_config(args: argparse.Namespace) -> RunConfig:
    """The run's config: ``--config`` or ``--panel`` (if given) with the flags on top.

    The files it names are read now too (every template compiled, the topic profile
    parsed), so a broken one is bad input before any call rather than a failure found
    after some calls were paid for, or a failed line for every item of a batch.
    """
    config = panel_config(args, overrides(args), CONFIG_FLAGS)
    config = with_decision_flags(config, args)
    check_config_files(config)
    return config


def check_config_files(config: RunConfig) -> None:
    """Read the files ``config`` names now: every template compiled, the topic profile parsed."""
    PromptRenderer(config.templates)
    if config.topics is not None:
        TopicProfiles.load(config.topics)
