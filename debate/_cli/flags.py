"""The flags of every command that calls models: models, panel, calls, costs and outputs.

``run``, ``judge``, ``council``, ``batch`` and ``calibrate`` take them all, so one change
of wording or range reaches every one of them.
"""

from __future__ import annotations

import argparse

from debate._cli.config import model_choice_flags, panel_flags
from debate._cli.costs import cost_flags
from debate._cli.outputs import store_flags
from debate._cli.parsing import json_flag, out_flag
from debate._cli.values import finite


def model_flags(parser: argparse.ArgumentParser, *, debate_panel: bool = True) -> None:
    """Flags that choose models, the panel, call limits and outputs.

    ``debate_panel=False`` leaves out the flags about how judges read a debate (topic
    profiles, reading order, swap): a command without a debate (the council) refuses them
    rather than accepting and ignoring them.
    """
    model_choice_flags(parser.add_argument_group("model"))
    panel_flags(parser, debate_panel)
    calls = parser.add_argument_group("calls")
    calls.add_argument("--timeout", type=finite, metavar="S", help="per-call timeout in seconds")
    calls.add_argument(
        "--deadline",
        type=finite,
        metavar="S",
        help="wall-clock budget of a debate or council (of each item in batch and calibrate)",
    )
    calls.add_argument("--max-retries", type=int, metavar="N", help="re-asks after invalid output")
    calls.add_argument(
        "--cache",
        metavar="PATH",
        help="response cache (SQLite; default OUT/cache.sqlite): re-running resumes",
    )
    calls.add_argument("--no-cache", action="store_true", help="do not read or write a cache")
    cost_flags(parser)
    out = parser.add_argument_group("output")
    out_flag(out, "where result.json goes", default="debate-out")
    json_flag(out, "print the result JSON on stdout")
    out.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    store_flags(out)
