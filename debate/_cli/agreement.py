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

from debate._cli.common import EXIT_OK, Commands, at_least, seed, user_file
from debate.exceptions import ConfigurationError
from debate.stats import fmt
from debate.stats._agreement import (
    LEVELS,
    bootstrap_alpha,
    fleiss_kappa,
    fleiss_kappa_se,
    label_counts,
)

LAYOUTS = ("items-by-raters", "raters-by-items")
"""How a ratings table is laid out: what its rows are, then what its columns are."""
DEFAULT_LAYOUT = "items-by-raters"

MAX_BOOTSTRAP = 100_000
"""Replicates beyond this narrow no interval visibly and take minutes; a typo (an extra
three zeros) should be refused, not run for hours."""


def add_parser(commands: Commands) -> None:
    """Register ``debate agreement``."""
    parser = commands.add_parser(
        "agreement",
        help="agreement statistics for a ratings CSV",
        description="Agreement statistics for a ratings CSV.",
    )
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
    parser.add_argument(
        "--bootstrap",
        type=at_least(0, MAX_BOOTSTRAP),
        default=1000,
        metavar="N",
        help=f"bootstrap replicates, 0 to {MAX_BOOTSTRAP} (default 1000; 0: no interval)",
    )
    parser.add_argument("--seed", type=seed, default=0, help="seed of the bootstrap")
    parser.add_argument("--domain", help="comma-separated ordered values (ordinal labels)")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=agreement_command)


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


def read_ratings(path: Path, *, names: bool, header: bool, numeric: bool) -> list[list[Any]]:
    """Rows of cells; blanks are None; numbers parsed when ``numeric``."""
    with path.open(newline="", encoding="utf-8") as handle:
        rows = [row for row in csv.reader(handle) if any(c.strip() for c in row)]
    if header and rows:
        rows = rows[1:]
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
    domain = args.domain.split(",") if args.domain else None
    result = bootstrap_alpha(raters, args.level, domain, n_boot=args.bootstrap, seed=args.seed)
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
