"""``debate example NAME [--out DIR]``: write a recorded panel shipped with the package.

The package ships a small real panel so that ``debate decide`` and ``debate validity`` can be
tried on judgments capable models made and people rated, without downloading anything:
``debate/data/examples/NAME/`` holds ``judgments.csv`` (the judges), ``labels.csv`` (the
people) and the data set's ``NOTICE`` and ``LICENSE``. The command copies them to a folder
and prints the commands to run on them. It imports nothing beyond the standard library.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from debate._cli.exits import EXIT_OK
from debate._cli.parsing import Commands, out_flag, subcommand
from debate.exceptions import ConfigurationError

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

EXAMPLES = {
    "pandalm": (
        "PandaLM test set (Apache-2.0): 999 answer pairs, two published judges "
        "(gpt-3.5-turbo, PandaLM-7B) and three people's votes on each pair"
    ),
}
"""The shipped examples, by name, with what they hold."""
FILES = ("judgments.csv", "labels.csv", "NOTICE", "LICENSE")
"""What every example folder holds and the command writes."""
DEFAULT_TARGET = 0.8
"""The target agreement the printed ``validity`` command suggests (PandaLM supports it)."""


HELP = "write a real recorded panel shipped with the package (judgments.csv, labels.csv)"
DESCRIPTION = (
    "Write a recorded panel shipped with the package, to try `debate decide` "
    "and `debate validity` on real judgments: "
    + "; ".join(f"{name}: {what}" for name, what in EXAMPLES.items())
    + "."
)


def example_folder(name: str) -> Traversable:
    """The shipped folder of example ``name`` (in a checkout or an installed wheel)."""
    return resources.files("debate.data").joinpath("examples").joinpath(name)


def add_parser(commands: Commands) -> None:
    """Register ``debate example``."""
    parser = subcommand(commands, "example", example_command, HELP, DESCRIPTION)
    parser.add_argument("name", choices=list(EXAMPLES), help="which example")
    out_flag(parser, "where the tables go (default: a folder named after NAME)")


def example_command(args: argparse.Namespace) -> int:
    """Copy the example's files to ``--out`` and print what they hold and what to run.

    A file already there with other content is never overwritten: one line, exit 2.
    """
    out = Path(args.name if args.out is None else args.out)
    source = example_folder(args.name)
    contents = {name: source.joinpath(name).read_bytes() for name in FILES}
    for name, data in contents.items():
        target = out / name
        if target.exists() and (not target.is_file() or target.read_bytes() != data):
            raise ConfigurationError(
                f"--out: {target} exists and is not the shipped {name}; choose another "
                "--out or move that file",
                field="--out",
            )
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, data in contents.items():
            (out / name).write_bytes(data)
    except OSError as exc:
        raise ConfigurationError(
            f"--out: cannot write to {out} ({exc.strerror or exc}); choose another folder",
            field="--out",
        ) from exc
    judges = _counts(contents["judgments.csv"])
    people = _counts(contents["labels.csv"])
    judgments, labels = out / "judgments.csv", out / "labels.csv"
    sys.stdout.write(
        f"{EXAMPLES[args.name]}\n"
        f"{judgments}: {judges[0]:,} verdicts of {judges[1]} judges on {judges[2]:,} items\n"
        f"{labels}: {people[0]:,} verdicts of {people[1]} people on {people[2]:,} items\n"
        f"{out / 'NOTICE'}: origin and license\n"
        f"next: debate decide {judgments}\n"
        f"      debate validity {judgments} --labels {labels} "
        f"--target-agreement {DEFAULT_TARGET:g} --out {out / 'validity'}\n"
    )
    return EXIT_OK


def _counts(table: bytes) -> tuple[int, int, int]:
    """Rows, distinct judges and distinct items of a shipped verdict table."""
    rows = list(csv.DictReader(io.StringIO(table.decode("utf-8"))))
    return len(rows), len({r["judge"] for r in rows}), len({r["item"] for r in rows})
