"""``debate panels [NAME]``: the shipped panel presets, or one preset's TOML to copy.

Without a name it lists every preset: its description, its judges as ``role@model (family,
endpoint)``, and what it needs (key variables, servers). With a name it prints the preset's
file as shipped, comments included, which works as a ``--config`` once saved and edited.
``--json`` prints the same as one JSON document (a list, or one preset with its ``toml``).
"""

from __future__ import annotations

import argparse
import json
import sys

from debate._cli.exits import EXIT_OK
from debate._cli.parsing import Commands, json_flag, subcommand
from debate.runtime import (
    PanelPreset,
    PresetJudge,
    describe_preset,
    list_presets,
    preset_text,
)

HELP = "list the shipped panel presets (mixed model families), or print one"
DESCRIPTION = (
    "List the shipped panel presets, or print one preset's TOML to save "
    "and edit; run one with --panel NAME (debate run, judge, council, batch, "
    "calibrate, serve, mcp)."
)


def add_parser(commands: Commands) -> None:
    """Register ``debate panels``."""
    parser = subcommand(commands, "panels", panels_command, HELP, DESCRIPTION)
    parser.add_argument("name", nargs="?", metavar="NAME", help="print this preset's TOML")
    json_flag(parser, "machine-readable output")


def panels_command(args: argparse.Namespace) -> int:
    """Print the list, or the named preset; an unknown name is bad input (exit 2)."""
    if args.name is not None:
        text = preset_text(args.name, "NAME")
        if args.json:
            record = {**describe_preset(args.name).model_dump(), "toml": text}
            sys.stdout.write(json.dumps(record, indent=2) + "\n")
        else:
            sys.stdout.write(text)
        return EXIT_OK
    presets = list_presets()
    if args.json:
        sys.stdout.write(json.dumps([p.model_dump() for p in presets], indent=2) + "\n")
        return EXIT_OK
    for preset in presets:
        sys.stdout.write("\n".join(_lines(preset)) + "\n\n")
    sys.stdout.write("print one: debate panels NAME; run one: debate run TOPIC --panel NAME\n")
    return EXIT_OK


def _lines(preset: PanelPreset) -> list[str]:
    """One preset's block: name and description, one line per judge, its keys and servers."""
    needs = preset.needs
    keys = ", ".join(needs.env) if needs.env else "none"
    return [
        f"{preset.name}: {preset.description}",
        *(f"  {_judge(j)}" for j in preset.judges),
        f"  keys: {keys}",
        f"  servers: {', '.join(needs.servers)}",
    ]


def _judge(judge: PresetJudge) -> str:
    """``role@model (family, endpoint)``, with the name, tier and standby where they say more."""
    named = "" if judge.name == judge.role else f"{judge.name}: "
    extra = [f"tier {judge.tier}"] if judge.tier > 1 else []
    extra += ["standby"] if judge.standby else []
    tail = f" [{', '.join(extra)}]" if extra else ""
    return f"{named}{judge.role}@{judge.model} ({judge.family}, {judge.endpoint}){tail}"
