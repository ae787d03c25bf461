"""``debate schema``: the JSON Schema of the files a run writes, for integrations to validate.

The schemas are generated from the pydantic records (:class:`DebateResult`,
:class:`CouncilResult`) and shipped in the package as ``debate/data/<kind>.schema.json``;
a test regenerates them and compares, so a shipped schema cannot drift from the records.
After changing a record, regenerate them with ``python -m debate._cli.schema``, and bump
:data:`SCHEMA_VERSION` when a field is removed, renamed or changes type (a reader of the
old version would break); adding an optional field does not need a bump.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from debate._cli.exits import EXIT_OK
from debate._cli.parsing import Commands, subcommand
from debate.records import CouncilResult, DebateResult

# v2: config.max_tokens may be null (each call's bound derived from its reply schema).
# v3: results record the cascade of judge tiers (judges' tier, decision.tier, cascade); every
# record forbids unknown keys, so a v2 validator would refuse a v3 result.
HELP = "print the JSON Schema of result.json"
DESCRIPTION = "Print the JSON Schema of a result file, to validate what a run wrote."

SCHEMA_VERSION = 3
"""The version of the result formats; it is in each schema's ``$id``."""

SCHEMAS: dict[str, type[BaseModel]] = {"result": DebateResult, "council": CouncilResult}
"""What ``debate schema KIND`` prints: ``result`` is a debate's result.json (``run``,
``judge``, each batch item), ``council`` a council's."""


def schema_id(kind: str) -> str:
    """The ``$id`` of a schema: its kind and version, as a URN (it resolves to no server)."""
    return f"urn:debate:schema:{kind}:v{SCHEMA_VERSION}"


def generate_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of ``kind``, freshly generated from its record.

    Serialization mode, because it describes the JSON a run writes (``model_dump_json``),
    not what the record would accept.
    """
    body = SCHEMAS[kind].model_json_schema(mode="serialization")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": schema_id(kind),
        "version": SCHEMA_VERSION,
        **body,
    }


def schema_text(schema: dict[str, Any]) -> str:
    """The schema as the shipped file holds it (sorted keys, so diffs stay small)."""
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def shipped_schema(kind: str) -> str:
    """The text of the schema shipped in the package."""
    return resources.files("debate.data").joinpath(f"{kind}.schema.json").read_text("utf-8")


def add_parser(commands: Commands) -> None:
    """Register ``debate schema``."""
    parser = subcommand(commands, "schema", schema_command, HELP, DESCRIPTION)
    parser.add_argument(
        "kind",
        choices=list(SCHEMAS),
        help="result: a debate's result.json (run, judge, batch items); council: a council's",
    )


def schema_command(args: argparse.Namespace) -> int:
    """Print the shipped schema of ``args.kind``."""
    sys.stdout.write(shipped_schema(args.kind))
    return EXIT_OK


def write_schemas(folder: Path) -> list[Path]:
    """Regenerate every shipped schema into ``folder`` (``debate/data`` of a checkout)."""
    paths = []
    for kind in SCHEMAS:
        path = folder / f"{kind}.schema.json"
        path.write_text(schema_text(generate_schema(kind)), encoding="utf-8")
        paths.append(path)
    return paths


if __name__ == "__main__":  # pragma: no cover - regenerating the shipped files
    for written in write_schemas(Path(__file__).resolve().parents[1] / "data"):
        sys.stdout.write(f"wrote {written}\n")
