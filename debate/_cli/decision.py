"""How the panel decides: ``--aggregate``, ``--min-judges`` and the ``--policy`` to apply.

Shared by the commands whose panel decides live (``run``, ``judge``) and those that decide
on recorded judgments (``decide``, ``validity``).
"""

from __future__ import annotations

import argparse
from typing import Any

from pydantic import ValidationError

from debate.exceptions import ConfigurationError
from debate.records import RunConfig, Thresholds, build_config, validation_message

DECISION_FLAGS = {"aggregate": "--aggregate", "min_judges": "--min-judges"}
"""``[thresholds]`` fields a flag sets, and the flag."""


def decision_flags(group: argparse._ArgumentGroup | argparse.ArgumentParser) -> None:
    """``--aggregate`` and ``--min-judges``: how the judges' margins combine, and how many."""
    group.add_argument(
        "--aggregate",
        choices=["weighted_mean", "median", "trimmed_mean", "majority"],
        help="how the judges' margins combine (default weighted_mean; [thresholds] aggregate)",
    )
    group.add_argument(
        "--min-judges",
        type=int,
        metavar="N",
        help="fewest scored judges a decision rests on (default 2; [thresholds] min_judges)",
    )


def decision_thresholds(thresholds: Thresholds, args: argparse.Namespace) -> Thresholds:
    """``thresholds`` with ``--aggregate``/``--min-judges`` on top, checked by Thresholds."""
    given = {f: getattr(args, f, None) for f in DECISION_FLAGS}
    given = {f: v for f, v in given.items() if v is not None}
    if not given:
        return thresholds
    try:
        return Thresholds.model_validate({**thresholds.model_dump(), **given})
    except ValidationError as exc:
        raise ConfigurationError(
            validation_message(exc, "thresholds", DECISION_FLAGS, Thresholds)
        ) from exc


def with_decision_flags(config: RunConfig, args: argparse.Namespace) -> RunConfig:
    """The config with the decision flags applied to its thresholds (the panel re-checked)."""
    thresholds = decision_thresholds(config.thresholds, args)
    if thresholds is config.thresholds:
        return config
    regular = sum(1 for j in config.judges if not j.standby)
    if getattr(args, "min_judges", None) is not None and args.min_judges > regular:
        raise ConfigurationError(
            f"--min-judges: {args.min_judges} is more than the panel's {regular} regular "
            "judges; lower it or add judges"
        )
    data = config.model_dump()
    data["thresholds"] = thresholds.model_dump()
    return build_config(data, "config")


def policy_flag(parser: argparse.ArgumentParser) -> None:
    """``--policy``, for the commands whose panel decides live (run, judge)."""
    parser.add_argument(
        "--policy",
        metavar="POLICY.json",
        help="declare only where the policy's guarantee holds (chosen by `debate validity "
        "--target-agreement` on score tables, e.g. from `debate calibrate`); below its "
        "threshold the outcome is escalate, and with tiers the next tier is asked first",
    )


def escalation_of(args: argparse.Namespace) -> dict[str, Any]:
    """The escalation rule ``--policy`` asks for, as the keyword a debate entry point takes."""
    if getattr(args, "policy", None) is None:
        return {}
    from debate.panel import PolicyRule
    from debate.storage import read_policy

    policy = read_policy(args.policy)
    try:
        return {"escalation": PolicyRule(policy)}
    except ValueError as exc:
        raise ConfigurationError(f"--policy {args.policy}: {exc}", field="--policy") from exc
