"""``debate run``: run a debate on a topic and judge it.

Also the steps ``debate judge`` shares: resolve the seed, record run.json around the work,
write result.json and the reports, record the run in the store, print the summary.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import sys
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from debate._cli.config import deliberate_flag, run_config
from debate._cli.costs import cost_and_limits
from debate._cli.decision import escalation_of, policy_flag
from debate._cli.exits import fail_on_flag, outcome_exit
from debate._cli.flags import model_flags
from debate._cli.outputs import history, open_cache, open_store, out_folder
from debate._cli.parsing import Commands, subcommand
from debate._cli.preload import Preloading
from debate._cli.progress import announce, progress, progress_flag
from debate._cli.summaries import budget_lines, cascade_lines
from debate.api import run_debate, write_result
from debate.records import DebateResult
from debate.runtime import ModelPool, Run, closing_pool, planned_calls
from debate.stats import fmt
from debate.storage import recording_run, resolve_seed

HELP = "run a debate on a topic and judge it"

Work = Callable[[dict[str, Any]], Coroutine[Any, Any, DebateResult]]
"""The debate itself, given its config, seed, escalation rule and ``run``."""


def add_parser(commands: Commands) -> None:
    """Register ``debate run``."""
    run = subcommand(commands, "run", run_command, HELP)
    run.add_argument("topic", help="the proposition to debate")
    run.add_argument(
        "--arguments", type=int, metavar="N", help="arguments per side (1-10, default 3)"
    )
    run.add_argument(
        "--rounds", type=int, metavar="N", help="cross-examination rounds (0-5, default 1)"
    )
    model_flags(run)
    deliberate_flag(run)
    progress_flag(run)
    fail_on_flag(run)
    policy_flag(run)


def run_command(args: argparse.Namespace) -> int:
    """Debate ``args.topic``, then judge it."""
    return debate_command(args, lambda shared: run_debate(args.topic, **shared))


def debate_command(args: argparse.Namespace, work: Work) -> int:
    """Check the flags, then run ``work`` with run.json, result.json, reports and the store.

    Exit code 0, or 3 when ``--fail-on`` lists the outcome (once everything is written).
    run.json names the platform, whose first lookup waits for a ``uname -p`` child process:
    a thread starts it now, while the flags are checked, rather than just before the calls.
    """
    threading.Thread(target=platform.platform, name="debate-platform", daemon=True).start()
    config = run_config(args)
    money = cost_and_limits(args)
    out = out_folder(args)
    seed, source = resolve_seed(args.seed, out)
    cache = open_cache(args, out)
    store = open_store(args)
    on_event = Preloading(progress(args))  # what the judging needs, imported during the calls
    track_records = history(args)
    escalation = escalation_of(args)
    # Every model is built now: a missing key is bad input, one line before the plan line.
    pool = ModelPool(config, seed=seed, model_path=args.model_path)
    pool.prepare(config, debaters=args.command == "run")
    run = Run(pool=pool, cache=cache, on_event=on_event, history=track_records, **money)
    total = planned_calls(config, debate=args.command == "run")
    announce(on_event, args.command, total)
    with recording_run(seed, source, args.argv, out, cache=cache) as end:
        shared = {"config": config, "seed": seed, "run": run, **escalation}
        try:
            result = asyncio.run(closing_pool(pool, work(shared)))
        finally:
            on_event.join()
        path = write_result(result, out)
        from debate.report import write_report  # after the calls: it imports the panel's numpy

        _, report_html = write_report(result, out)
        if store is not None:
            store.record(result)
            end["store"] = str(store.path)
    if args.json:
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
    else:
        sys.stdout.write(summary(result, str(path)) + f"\nReport: {report_html}\n")
    return outcome_exit(args, [result.decision.outcome])


def summary(result: DebateResult, path: str) -> str:
    """A short human summary of a result."""
    from debate.report import deliberation_lines

    d, a, v = result.decision, result.agreement, result.vote
    if d.outcome == "winner":
        head = f"Decision: {d.winner} wins"
    else:
        head = {
            "too_close": "Decision: too close to call",
            "irreconcilable": "Decision: none - the judges do not agree (irreconcilable)",
            "insufficient": "Decision: none - too few judges could score (insufficient)",
            "escalate": "Decision: none under the policy - escalate (to a stronger tier or to "
            "people)",
        }[d.outcome]
    lines = [head]
    level = f"{v.confidence:.0%} CI"
    if v.margin is not None:
        ci = f", {level} [{v.margin_ci[0]:+.3f}, {v.margin_ci[1]:+.3f}]" if v.margin_ci else ""
        lines.append(
            f"Margin PRO-CON: {v.margin:+.3f}{ci} ({v.calibration} calibration, "
            f"topic type {v.topic_type}"
            + ("" if v.aggregate == "weighted_mean" else f", {v.aggregate} of the judges")
            + ")"
        )
    if v.margin_points is not None:
        pts = v.margin_points_ci
        ci = f", {level} [{pts[0]:+.2f}, {pts[1]:+.2f}]" if pts else ""
        lines.append(f"Margin in points of the 1-10 scale: {v.margin_points:+.2f}{ci}")

    if d.p_agree is not None:
        kind = "calibrated by the policy" if d.p_agree_calibrated else "uncalibrated score"
        lines.append(f"p_agree for {d.lead}: {d.p_agree:.3f} ({kind})")
    lines.append(
        f"Agreement: alpha {fmt(a.alpha)}, kappa {fmt(a.kappa)}; "
        f"{a.judges_scored} judges scored, {a.judges_unscored} unscored; "
        f"independent votes {a.votes_text()}"
    )
    if a.warning:
        lines.append(f"  ! {a.warning}")
    lines += [f"  - {r}" for r in d.reasons]
    lines.append(f"Recommendation: {d.recommendation}")
    lines += deliberation_lines(result)
    lines += cascade_lines(result.cascade, d.tier)
    u = result.usage
    cost = "not priced" if u.cost_usd is None else f"${u.cost_usd:.4f}"
    lines.append(
        f"Usage: {u.calls} calls, {u.prompt_tokens} prompt + {u.completion_tokens} completion "
        f"tokens, {u.retries} retries, cost {cost}"
    )
    lines += budget_lines(u)
    lines.append(f"Result: {path}")
    return "\n".join(lines)
