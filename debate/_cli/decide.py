"""``debate decide``: the panel's decision on judgments made elsewhere, with no model calls.

Reads the tidy judgments table (``docs/judgments.md``: score rows or verdict rows, CSV or
JSONL) and writes one decision per item (per pair of options when an item has more than
two) as JSONL: outcome, winner, margin and its interval, agreement, reasons. The summary
(counts of each outcome, the weights used) goes to stdout, or to stderr when the decisions
themselves go to stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from debate._cli.decision import decision_flags, decision_thresholds
from debate._cli.exits import EXIT_OK
from debate._cli.files import refuse_folder, sqlite_file, user_file
from debate._cli.parsing import Command, Commands, Parser, json_flag, out_flag, subcommand
from debate._cli.values import seed
from debate.exceptions import ConfigurationError
from debate.records import parse_json

if TYPE_CHECKING:
    from debate.judgments import Decided, TrackRecords, Weights
    from debate.records import Thresholds


HELP = "decide from recorded judgments (no model calls)"
DESCRIPTION = (
    "Run the panel's decision rules on judgments made elsewhere: a tidy "
    "table of scores or pairwise verdicts (see docs/judgments.md)."
)


def add_parser(commands: Commands) -> None:
    """Register ``debate decide``."""
    parser = table_command(commands, "decide", decide_command, HELP, DESCRIPTION)
    table_flags(parser)
    parser.add_argument(
        "--weights",
        default="equal",
        metavar="equal|latent|FILE.json",
        help="judge weights: equal (default), latent (fitted from the judges' agreement, "
        "no labels needed), or a JSON object of judge name to weight",
    )
    parser.add_argument(
        "--track-records",
        metavar="DB",
        help="weigh each judge by its track record in this store (a judge's name is its key)",
    )
    parser.add_argument(
        "--policy",
        metavar="POLICY.json",
        help="declare only where the policy's guarantee holds (written by `debate validity "
        "--target-agreement`); below its threshold a decision is escalate",
    )
    parser.add_argument(
        "--to-people",
        metavar="DIR",
        help="with --policy: write the escalated items as a labelling sheet (to_label.csv, "
        "to_label.html) for people, whose rulings come back through --labels",
    )
    out_flag(parser, "write the decisions here (default: stdout)", metavar="FILE.jsonl")
    json_flag(parser, "the summary as JSON")


def table_command(
    commands: Commands, name: str, func: Command, help: str, description: str
) -> Parser:
    """Register a command on a recorded judgments table (``decide``, ``validity``): FILE."""
    parser = subcommand(commands, name, func, help, description)
    parser.add_argument("file", metavar="FILE", help="judgments table, .csv or .jsonl")
    return parser


def table_flags(parser: argparse.ArgumentParser) -> None:
    """Flags shared by ``decide`` and ``validity``: how to read the table and decide."""
    parser.add_argument(
        "--scale",
        metavar="LOW-HIGH",
        help="the scores' scale, e.g. 1-5, when the file does not declare it",
    )
    parser.add_argument(
        "--dimension", metavar="NAME", help="decide on this dimension only (score tables)"
    )
    parser.add_argument(
        "--config", metavar="FILE", help="config TOML whose [thresholds] the rules use"
    )
    parser.add_argument("--seed", type=seed, default=0, help="seed of the bootstrap intervals")
    decision_flags(parser)


def thresholds(args: argparse.Namespace) -> Thresholds:
    """``[thresholds]`` of ``--config``, else the defaults."""
    from debate.records import Thresholds, load_config

    found = Thresholds() if args.config is None else load_config(args.config).thresholds
    return decision_thresholds(found, args)


def _weights(args: argparse.Namespace) -> Weights:
    if args.track_records is not None:
        if args.weights != "equal":
            raise ConfigurationError(
                "--track-records: give either --weights or --track-records, not both",
                field="--track-records",
            )
        return _track_records(Path(args.track_records))
    if args.weights in ("equal", "latent"):
        return str(args.weights)
    path = Path(args.weights)
    if not path.is_file():
        raise ConfigurationError(
            f"--weights {args.weights}: not equal, latent or a JSON file; give one of them",
            field="--weights",
        )
    with user_file(path, "weights file"):
        try:
            weights = parse_json(path.read_text(encoding="utf-8"), f"--weights {path}")
        except json.JSONDecodeError as exc:
            raise ConfigurationError(
                f"--weights {path}: not JSON ({exc.msg} at line {exc.lineno}); write an "
                'object such as {"judge-1": 1.0, "judge-2": 0.5}',
                field="--weights",
            ) from exc
    if not isinstance(weights, dict):
        raise ConfigurationError(
            f"--weights {path}: a JSON object of judge name to weight is needed",
            field="--weights",
        )
    return weights


def _track_records(path: Path) -> TrackRecords:
    """The store of ``--track-records``; one that cannot be opened is bad input."""
    from debate.judgments import TrackRecords

    lead = f"--track-records {path}: cannot open the track records"
    remedy = "give the run store that `debate calibrate` wrote (SQLite)"
    with sqlite_file(lead, remedy, field="--track-records"):
        refuse_folder(path)
        records = TrackRecords(path)
        records.get("")  # reads the tables: a file that is not SQLite fails here
    return records


def decide_command(args: argparse.Namespace) -> int:
    """Decide, write the decisions, print the summary."""
    from debate.judgments import decide_judgments  # scipy: this command's alone

    policy = None
    if args.policy is not None:
        from debate.storage import read_policy

        if args.weights != "equal" or args.track_records is not None:
            raise ConfigurationError(
                "--policy carries its own weights: leave out --weights and --track-records",
                field="--policy",
            )
        policy = read_policy(args.policy)
    elif args.to_people is not None:
        raise ConfigurationError(
            "--to-people writes the items a policy escalates: give --policy too",
            field="--to-people",
        )
    with user_file(args.file, "judgments table"):
        decided = decide_judgments(
            args.file,
            scale=args.scale,
            weights=_weights(args),
            thresholds=thresholds(args),
            dimension=args.dimension,
            seed=args.seed,
            policy=policy,
        )
    if args.to_people is not None:
        from debate.report import write_labelling_sheet

        sheet = write_labelling_sheet(Path(args.to_people), decided.decisions)
        decided = decided.model_copy(
            update={
                "summary": decided.summary.model_copy(
                    update={"notes": [*decided.summary.notes, sheet]}
                )
            }
        )
    lines = "".join(d.model_dump_json() + "\n" for d in decided.decisions)
    if args.out:
        with user_file(args.out, "decisions file", writing=True):
            Path(args.out).write_text(lines, encoding="utf-8")
        summary_stream = sys.stdout
    else:
        sys.stdout.write(lines)
        summary_stream = sys.stderr
    if args.json:
        summary_stream.write(decided.summary.model_dump_json(indent=2) + "\n")
    else:
        summary_stream.write(summary_text(decided) + "\n")
    if summary_stream is not sys.stderr:  # else the summary on stderr carries them
        warn(decided.summary.notes)
    return EXIT_OK


def warn(notes: list[str]) -> None:
    """The notes that say the table itself looks wrong, as warnings on stderr."""
    from debate.panel import BA_AS_READ

    for note in notes:
        if note.startswith(BA_AS_READ):
            sys.stderr.write(f"warning: {note}\n")


def summary_text(decided: Decided) -> str:
    """Counts of each outcome and where the weights came from, in a few lines."""
    s = decided.summary
    counts = ", ".join(f"{n} {o.replace('_', ' ')}" for o, n in s.outcomes.items() if n)
    what: dict[str, Any] = {
        "read": f"{s.rows} {s.kind} rows, {s.items} items, {len(s.judges)} judges",
        "decided": f"{s.decisions} decisions: {counts or 'none'}",
        "weights": s.weights_source
        + ("" if s.weights_source == "equal" else ": " + _weights_text(s.weights)),
    }
    lines = [f"{k}: {v}" for k, v in what.items()]
    if s.cascade is not None:
        c = s.cascade
        per_tier = ", ".join(f"tier {t} {n}" for t, n in zip(c.tiers, c.declared, strict=True))
        lines.append(
            f"cascade: declared {per_tier}; {c.escalated} escalated to people; read "
            f"{c.judgments_used} judgments of the {c.judgments_all_tiers} that asking every "
            "tier would read"
        )
    lines += [f"note: {n}" for n in s.notes]
    if s.ignored_columns:
        lines.append(f"note: ignored columns {', '.join(s.ignored_columns)}")
    return "\n".join(lines)


def _weights_text(weights: dict[str, float]) -> str:
    return ", ".join(f"{j} {w:.3g}" for j, w in weights.items())
