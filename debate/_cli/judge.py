"""``debate judge``: judge a transcript written by anyone (a meeting, another tool)."""

from __future__ import annotations

import argparse

from debate._cli.config import deliberate_flag
from debate._cli.decision import policy_flag
from debate._cli.exits import fail_on_flag
from debate._cli.files import user_file
from debate._cli.flags import model_flags
from debate._cli.parsing import Commands, subcommand
from debate._cli.progress import progress_flag
from debate._cli.run import debate_command
from debate.api import judge_transcript, load_transcript

HELP = "judge a transcript written by anyone"


def add_parser(commands: Commands) -> None:
    """Register ``debate judge``."""
    judge = subcommand(commands, "judge", judge_command, HELP)
    judge.add_argument("transcript", metavar="TRANSCRIPT.json")
    model_flags(judge)
    deliberate_flag(judge)
    progress_flag(judge)
    fail_on_flag(judge)
    policy_flag(judge)


def judge_command(args: argparse.Namespace) -> int:
    """Judge ``args.transcript``; a bad transcript is refused before any other work."""
    with user_file(args.transcript, "transcript"):
        transcript = load_transcript(args.transcript)
    return debate_command(args, lambda shared: judge_transcript(transcript, **shared))
