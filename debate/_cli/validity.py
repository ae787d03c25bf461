"""``debate validity``: does the panel beat its best judge? Measured against people.

Cross-fits the panel on a judgments table against people's labels (a second table, or the
people's rows of the same one named with ``--people``): every weighting that learns does so
on the other folds only. Writes ``validity.json``, ``validity.html`` (with the
risk-coverage plot), ``validity.md`` and ``rows.csv`` (one row per unit and method or judge)
into ``--out``; prints the markdown tables (or the JSON report with ``--json``). With
``--dimension each`` a score table is validated once per dimension and once over all of
them, each into its own files (``validity-<dimension>.*``), and ``summary.md`` (printed
first) gives one row per dimension.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from debate._cli.decide import table_command, table_flags, thresholds, warn
from debate._cli.exits import EXIT_OK
from debate._cli.files import user_file
from debate._cli.outputs import out_folder
from debate._cli.parsing import Commands, bootstrap_flag, count_flag, json_flag, out_flag
from debate._cli.values import probability_between
from debate.exceptions import ConfigurationError

if TYPE_CHECKING:
    from debate.judgments import Validity
    from debate.records import Table, ValidityReport

HELP = "measure the panel against people, with cross-fitting"
DESCRIPTION = (
    "Measure the panel (and every single judge) against people's labels on "
    "recorded judgments; weights learn only on the other folds."
)

MAX_FOLDS = 100


def add_parser(commands: Commands) -> None:
    """Register ``debate validity``."""
    parser = table_command(commands, "validity", validity_command, HELP, DESCRIPTION)
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--labels", metavar="FILE", help="people's labels, the same format")
    source.add_argument(
        "--people",
        metavar="LIST",
        help="comma-separated judges of FILE who are people (their rows are the labels)",
    )
    table_flags(parser)
    parser.add_argument(
        "--label-scale", metavar="LOW-HIGH", help="the labels' scale when not declared"
    )
    count_flag(
        parser,
        "--folds",
        2,
        MAX_FOLDS,
        metavar=None,
        default=5,
        help="cross-fitting folds (default 5)",
    )
    bootstrap_flag(parser, 10, "bootstrap replicates of every interval (default 1000)")
    _policy_flags(parser)
    out_flag(parser, "report folder", default="validity-out")
    shown = parser.add_mutually_exclusive_group()
    json_flag(shown, "print the report as JSON")
    shown.add_argument(
        "--brief",
        action="store_true",
        help="print a few sentences (the best judge, the panel at its coverage and at 100 %%, "
        "the policy's guarantee) instead of the tables; the files are written all the same",
    )


def _policy_flags(parser: argparse.ArgumentParser) -> None:
    """``--target-agreement`` (which makes a policy), its ``--risk`` and its ``--tiers``."""
    parser.add_argument(
        "--target-agreement",
        type=probability_between(0.5, 1.0),
        metavar="T",
        help="choose a policy: declare only where agreement with people is at least T "
        "(e.g. 0.90) with probability at least 1 - risk; written to OUT/policy.json",
    )
    parser.add_argument(
        "--risk",
        type=probability_between(0.0, 0.5, high_included=True),
        default=0.10,
        metavar="R",
        help="with --target-agreement: the chance the guarantee fails (default 0.10)",
    )
    parser.add_argument(
        "--tiers",
        metavar="JUDGE=TIER,...",
        help="with --target-agreement: a cascade; each judge's tier (1 cheapest, default 1)",
    )


def _tiers(text: str | None) -> dict[str, int] | None:
    """``--tiers a=1,b=2`` as a mapping; one line naming the bad part otherwise."""
    if text is None:
        return None
    tiers: dict[str, int] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        judge, _, tier = part.rpartition("=")
        if not judge.strip() or not tier.strip().isdigit() or int(tier) < 1:
            raise ConfigurationError(
                f"--tiers: {part!r} is not JUDGE=TIER with a whole tier from 1; write e.g. "
                "--tiers small-judge=1,large-judge=2",
                field="--tiers",
            )
        tiers[judge.strip()] = int(tier)
    return tiers


def validity_command(args: argparse.Namespace) -> int:
    """Validate (per dimension with ``--dimension each``), write the files, print tables."""
    # scipy and the validity report: imported by this command alone
    from debate.judgments import validate_judgments

    tiers = _checked_flags(args)  # before anything is read or made
    table, labels = _tables(args)
    dimensions = _dimensions(args, table)
    out = out_folder(args)
    people = [p.strip() for p in args.people.split(",")] if args.people else []
    rules = thresholds(args)  # read --config once, not once per dimension
    texts = []
    reports = []
    for dimension in dimensions:
        validity = validate_judgments(
            table,
            labels,
            people=people,
            folds=args.folds,
            seed=args.seed,
            n_boot=args.bootstrap,
            dimension=dimension,
            thresholds=rules,
            target_agreement=args.target_agreement,
            risk=args.risk,
            tiers=tiers,
            refused_in_report=len(dimensions) > 1,
        )
        _write(out, "" if len(dimensions) == 1 else f"-{dimension or 'all'}", validity)
        if dimension == dimensions[0]:  # the table's warnings are the same per dimension
            warn(validity.report.notes)
        reports.append(validity.report)
        texts.append(_shown(args, validity.report))
    sys.stdout.write("\n".join(_finish(args, out, reports, texts)) + "\n")
    return EXIT_OK


def _checked_flags(args: argparse.Namespace) -> dict[str, int] | None:
    """``--tiers`` read, and the flags that go together checked: the tiers, or a refusal."""
    tiers = _tiers(args.tiers)
    if args.target_agreement is None and tiers is not None:
        raise ConfigurationError(
            "--tiers makes a cascade policy: give --target-agreement too", field="--tiers"
        )
    if args.labels is None and args.people is None:
        raise ConfigurationError(
            "give people's labels: --labels FILE, or --people NAME,... naming the people "
            "among the judges of FILE",
            field="--labels",
        )
    return tiers


def _tables(args: argparse.Namespace) -> tuple[Table, Table | None]:
    """The judgments table and the ``--labels`` table (None with ``--people``)."""
    from debate.judgments import load_table

    with user_file(args.file, "judgments table"):
        table = load_table(args.file, args.scale)
    labels = None
    if args.labels is not None:
        with user_file(args.labels, "labels table"):
            labels = load_table(args.labels, args.label_scale or args.scale)
    return table, labels


def _dimensions(args: argparse.Namespace, table: Table) -> list[str | None]:
    """``--dimension``; with ``each``, every dimension of a score table and then all of them."""
    from debate.records import ScoreTable

    if args.dimension != "each":
        return [args.dimension]
    if not isinstance(table, ScoreTable):
        raise ConfigurationError("--dimension each applies to score tables", field="--dimension")
    return [*table.dimensions, None]


def _shown(args: argparse.Namespace, report: ValidityReport) -> str:
    """What is printed of one report: ``--brief`` sentences, ``--json``, or the tables."""
    if args.brief:
        from debate.report import render_validity_brief

        return render_validity_brief(report)
    if args.json:
        return report.model_dump_json(indent=2)
    from debate.judgments import render_validity_markdown

    return render_validity_markdown(report)


def _finish(
    args: argparse.Namespace, out: Path, reports: list[ValidityReport], texts: list[str]
) -> list[str]:
    """Refuse when no dimension has a policy, warn for each without one, add the summary."""
    from debate.judgments import render_validity_summary

    refused = [r for r in reports if r.policy_refusal is not None]
    if refused and len(refused) == len(reports):
        raise ConfigurationError(
            f"no dimension supports the target: {refused[0].policy_refusal}",
            field="--target-agreement",
        )
    for r in refused:  # the others' policies are written; this one's reason, on stderr
        sys.stderr.write(f"warning: {r.dimension or 'all'}: no policy: {r.policy_refusal}\n")
    if len(reports) > 1 and not args.json:
        summary = render_validity_summary(reports)
        (out / "summary.md").write_text(summary, encoding="utf-8")
        if not args.brief:
            texts = [summary, *texts]
    if args.brief:
        texts = [*texts, _where(out, args.file, reports)]
    return texts


def _where(out: Path, file: str, reports: list[ValidityReport]) -> str:
    """Where ``--brief`` readers find the rest: the report and the policy to apply."""
    if len(reports) > 1:
        return f"reports: {out}/validity-*.html"
    lines = [f"report: {out / 'validity.html'}"]
    if reports[0].policy is not None:
        lines.append(
            f"apply the policy to new judgments: debate decide {file} --policy "
            f"{out / 'policy.json'} --to-people {out / 'to-people'}"
        )
    return "\n".join(lines) + "\n"


def _write(out: Path, suffix: str, validity: Validity) -> None:
    from debate.judgments import render_validity_html, render_validity_markdown, write_frame_csv
    from debate.storage import write_json_atomic

    report = validity.report
    write_json_atomic(out / f"validity{suffix}.json", report.model_dump_json(indent=2) + "\n")
    (out / f"validity{suffix}.html").write_text(render_validity_html(report), encoding="utf-8")
    (out / f"validity{suffix}.md").write_text(render_validity_markdown(report), encoding="utf-8")
    write_frame_csv(out / f"rows{suffix}.csv", validity.frame)
    if validity.policy is not None:
        from debate.storage import write_policy

        write_policy(out / f"policy{suffix}.json", validity.policy)
