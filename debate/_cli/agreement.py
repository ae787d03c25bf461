"""``debate agreement``: alpha (with a bootstrap interval) or kappa for a ratings file.

The file is CSV, one row per item and one column per rater (``--layout items-by-raters``,
the usual layout of a ratings sheet); ``--layout raters-by-items`` reads it transposed.
Blank cells are missing. With ``--format alpha`` (default) the cells are ratings, with
``--format fleiss`` raters' labels. A header row is skipped with ``--header``, and a first
column of item (or rater) names with ``--names``.

The two readings of one table give different statistics (an alpha of 0.86 read one way
can be -0.13 read the other), and the file does not say which it is. So a square table,
which either reading fits, needs ``--layout``; any other is read items-by-raters, with a
warning naming the reading unless ``--layout`` was given.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from pathlib import Path
from typing import Any

from debate._cli.exits import EXIT_OK
from debate._cli.files import user_file
from debate._cli.parsing import MAX_BOOTSTRAP, Commands, bootstrap_flag, json_flag, subcommand
from debate._cli.values import seed
from debate.exceptions import ConfigurationError
from debate.stats import (
    LEVELS,
    bootstrap_alpha,
    fleiss_kappa,
    fleiss_kappa_se,
    fmt,
    label_counts,
)

HELP = "agreement statistics for a ratings CSV"
DESCRIPTION = "Agreement statistics for a ratings CSV."

LAYOUTS = ("items-by-raters", "raters-by-items")
"""How a ratings table is laid out: what its rows are, then what its columns are."""
DEFAULT_LAYOUT = "items-by-raters"


def add_parser(commands: Commands) -> None:
    """Register ``debate agreement``."""
    parser = subcommand(commands, "agreement", agreement_command, HELP, DESCRIPTION)
    parser.add_argument("file", metavar="FILE.csv")
    parser.add_argument("--level", choices=LEVELS, default="interval")
    parser.add_argument("--format", choices=["alpha", "fleiss"], default="alpha")
    parser.add_argument(
        "--layout",
        choices=LAYOUTS,
        help="rows are items and columns raters (items-by-raters, the default reading) or "
        "the transpose; required when the table is square",
    )
    parser.add_argument("--names", action="store_true", help="first column holds names")
    parser.add_argument("--header", action="store_true", help="first row is a header")
    bootstrap_flag(
        parser, 0, f"bootstrap replicates, 0 to {MAX_BOOTSTRAP} (default 1000; 0: no interval)"
    )
    parser.add_argument("--seed", type=seed, default=0, help="seed of the bootstrap")
    parser.add_argument("--domain", help="comma-separated ordered values (ordinal labels)")
    json_flag(parser)


def _cell(text: str, numeric: bool) -> Any:
    text = text.strip()
    if text == "" or text.upper() in ("NA", "NAN", "NULL"):
        return None
    if numeric:
        return float(text)
    try:
        return float(text)
    except ValueError:
        return text


ID_HEADERS = frozenset(
    {"id", "item", "items", "itemid", "unit", "unitid", "name", "names", "key", "index", "no"}
    | {"row", "rater", "raters", "raterid", "judge", "annotator", "case", "story", "storyid"}
)
"""Header names (lower case, letters and digits only) that name items or raters, not ratings."""
MIN_ID_ROWS = 3
"""Below this many rows, distinct values in a column say nothing about it being ids."""


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _looks_like_ids(values: list[str], others: set[str]) -> bool:
    """Distinct per row, and either labels no rater used or a run of integers past theirs.

    Integers must run 1, 2, 3, ... (any start) and reach outside the range of the other
    columns' numbers: a rater whose ratings happen to climb by one stays a rater.
    """
    cells = [v.strip() for v in values]
    if len(cells) < MIN_ID_ROWS or "" in cells or len(set(cells)) != len(cells):
        return False
    numbers = [_number(c) for c in cells]
    if any(n is None for n in numbers):
        return not set(cells) & others  # labels: none of them is anyone's rating
    run = [n for n in numbers if n is not None]
    if not all(b - a == 1 for a, b in zip(run, run[1:], strict=False)):
        return False
    rated = [n for n in (_number(c) for c in others if c) if n is not None]
    return bool(rated) and (max(run) > max(rated) or min(run) < min(rated))


def id_column_problem(header: list[str] | None, rows: list[list[str]]) -> str | None:
    """Why the first column looks like item (or rater) names rather than ratings, if it does.

    Without ``--names`` such a column is read as one more rater, who agrees with no one:
    ``--header`` on a file with an ``id`` column gave alpha 0.51 where the raters' own
    agreement is 0.96, with no warning. A header named like ``id`` or ``item`` says so; so
    do values distinct per row that no other column holds, when they are labels or a run
    of consecutive integers (1, 2, 3, ...).
    """
    if not rows or len(rows[0]) < 2:
        return None
    name = header[0].strip() if header else ""
    if "".join(ch for ch in name.lower() if ch.isalnum()) in ID_HEADERS:
        return f"its header is {name!r}"
    others = {c.strip() for row in rows for c in row[1:]}
    if _looks_like_ids([row[0] for row in rows], others):
        return "its values are distinct per row and unlike the ratings"
    return None


def read_ratings(path: Path, *, names: bool, header: bool, numeric: bool) -> list[list[Any]]:
    """Rows of cells; blanks are None; numbers parsed when ``numeric``.

    Raises:
        ValueError: a first column that looks like names or ids while ``--names`` is not
            given (it would be counted as a rater), ragged rows, or a label where a number
            belongs.
    """
    with path.open(newline="", encoding="utf-8") as handle:
        rows = [row for row in csv.reader(handle) if any(c.strip() for c in row)]
    head = rows[0] if header and rows else None
    if header and rows:
        rows = rows[1:]
    if not names:
        problem = id_column_problem(head, [r for r in rows if len(r) == len(rows[0])])
        if problem is not None:
            raise ValueError(
                f"--names: the first column looks like item or rater names ({problem}), and "
                "would be counted as a rater; give --names to leave it out"
            )
    if names:
        rows = [row[1:] for row in rows]
    if not rows:
        raise ValueError(f"{path} has no ratings")
    width = len(rows[0])
    for number, row in enumerate(rows, start=1):
        if len(row) != width:
            raise ValueError(
                f"row {number} has {len(row)} cells where the first has {width}; give every "
                "row the same number of columns (leave missing ratings blank)"
            )
    out = []
    for number, row in enumerate(rows, start=1):
        try:
            out.append([_cell(c, numeric) for c in row])
        except ValueError as exc:
            raise ValueError(
                f"row {number} has a value that is not a number ({exc}); use --level nominal "
                "for labels, or --header if the first row names the columns"
            ) from exc
    return out


def agreement_command(args: argparse.Namespace) -> int:
    """Compute the statistic and print it.

    Bad input (a missing or unreadable file, ragged rows, a label where a number belongs,
    data the statistic cannot use) is a configuration error: one line, exit 2.
    """
    try:
        report = _statistic(args)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from exc
    if args.layout is None:  # after the work, so a refusal stays one line
        sys.stderr.write(
            f"warning: read {args.file} as {report['layout']} (rows are items, columns are "
            "raters); give --layout raters-by-items if its rows are raters\n"
        )
    if args.json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        sys.stdout.write(_line(report) + "\n")
    return EXIT_OK


def _statistic(args: argparse.Namespace) -> dict[str, Any]:
    """Read the ratings and compute kappa or alpha; ValueError on data they cannot use."""
    path = Path(args.file)
    if not path.is_file():
        problem = "is a folder" if path.is_dir() else "does not exist"
        raise ValueError(f"{path} {problem}; give the path of a CSV file")
    numeric = args.format == "alpha" and args.level in ("interval", "ratio")
    with user_file(path, "ratings file"):
        rows = read_ratings(path, names=args.names, header=args.header, numeric=numeric)
    layout = _layout(args.layout, rows)
    items = rows if layout == "items-by-raters" else _transpose(rows)
    if args.format == "fleiss":
        counts = label_counts(items)
        kappa = fleiss_kappa(counts)
        se = fleiss_kappa_se(counts)
        return {
            "statistic": "fleiss_kappa",
            "layout": layout,
            "kappa": None if math.isnan(kappa) else kappa,
            "se": None if math.isnan(se) else se,
            "items": len(items),
            "raters": len(items[0]),
        }
    raters = _transpose(items)  # bootstrap_alpha takes one row per rater
    # parsed as the cells are, so --domain 1,2,3 matches cells read as 1.0, 2.0, 3.0
    domain = [_cell(v, False) for v in args.domain.split(",")] if args.domain else None
    try:
        result = bootstrap_alpha(raters, args.level, domain, n_boot=args.bootstrap, seed=args.seed)
    except ValueError as exc:
        raise ValueError(cli_words(str(exc))) from exc
    return {
        "statistic": "krippendorff_alpha",
        "layout": layout,
        "level": args.level,
        "alpha": None if math.isnan(result.estimate) else result.estimate,
        "ci95": None if math.isnan(result.low) else [result.low, result.high],
        "bootstrap": result.n_boot,
        "raters": len(raters),
        "units": len(items),
    }


LIBRARY_WORDS = (
    ("pass value_domain, e.g. ['low', 'mid', 'high']", "give --domain low,mid,high (lowest first)"),
    ("pass value_domain", "give --domain with the values lowest first"),
    ("value_domain", "--domain"),
    ("level='nominal'", "--level nominal"),
    ("level='ordinal'", "--level ordinal"),
)
"""The library's argument names in its errors, and the flags that set them here."""


def cli_words(message: str) -> str:
    """An error of :mod:`debate.stats` in the flags' words: ``--domain``, not value_domain."""
    for library, flag in LIBRARY_WORDS:
        message = message.replace(library, flag)
    if "--domain" in message and not message.startswith("--domain"):
        message = "--domain: " + message
    return message


def _layout(given: str | None, rows: list[list[Any]]) -> str:
    """``--layout``, else items-by-raters; a square table, which both readings fit, needs it."""
    if given is not None:
        return given
    if len(rows) == len(rows[0]) > 1:
        raise ValueError(
            f"--layout: the table is square ({len(rows)} x {len(rows)}), so its rows could be "
            "items or raters; give --layout items-by-raters or --layout raters-by-items"
        )
    return DEFAULT_LAYOUT


def _transpose(rows: list[list[Any]]) -> list[list[Any]]:
    return [list(column) for column in zip(*rows, strict=True)]


def _line(report: dict[str, Any]) -> str:
    """The statistic in one human line."""
    if report["statistic"] == "fleiss_kappa":
        se_text = "" if report["se"] is None else f" (SE under H0 {report['se']:.4f})"
        return (
            f"Fleiss' kappa = {fmt(report['kappa'], 4)}{se_text}; {report['items']} items x "
            f"{report['raters']} raters"
        )
    ci = report["ci95"]
    ci_text = "" if ci is None else f", 95% CI [{ci[0]:.4f}, {ci[1]:.4f}]"
    return (
        f"Krippendorff's alpha ({report['level']}) = {fmt(report['alpha'], 4)}{ci_text}; "
        f"{report['raters']} raters x {report['units']} units"
    )
