"""``debate agreement``: alpha (with a bootstrap interval) or kappa for a ratings file.

The file is CSV. With ``--format alpha`` (default) rows are raters and columns are units,
blank cells are missing. With ``--format fleiss`` rows are items and columns are raters'
labels. An optional header row is detected (a first row whose cells are not all numbers
while later rows are) and skipped, and so is a first column of rater or item names when
``--names`` is given.
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
    if args.format == "fleiss":
        counts = label_counts(rows)
        kappa = fleiss_kappa(counts)
        se = fleiss_kappa_se(counts)
        return {
            "statistic": "fleiss_kappa",
            "kappa": None if math.isnan(kappa) else kappa,
            "se": None if math.isnan(se) else se,
            "items": len(rows),
            "raters": len(rows[0]),
        }
    domain = args.domain.split(",") if args.domain else None
    result = bootstrap_alpha(rows, args.level, domain, n_boot=args.bootstrap, seed=args.seed)
    return {
        "statistic": "krippendorff_alpha",
        "level": args.level,
        "alpha": None if math.isnan(result.estimate) else result.estimate,
        "ci95": None if math.isnan(result.low) else [result.low, result.high],
        "bootstrap": result.n_boot,
        "raters": len(rows),
        "units": len(rows[0]),
    }


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
