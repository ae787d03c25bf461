"""``debate warm``: start, show or stop the warm process that ``DEBATE_WARM=1`` commands fork from.

The warm process and its client are :mod:`debate._cli.warm_server` and
:mod:`debate._cli.warm_client`; this command only manages it. ``start`` is for a script that
wants its first command warm too; ``stop`` ends every warm process of this user (they also
end by themselves after ``DEBATE_WARM_IDLE`` seconds without a command).
"""

from __future__ import annotations

import argparse
import json
import sys

from debate._cli.exits import EXIT_OK, EXIT_RUNTIME
from debate._cli.parsing import Commands, json_flag, subcommand
from debate._cli.warm_client import WARM_COMMANDS, ask, servers, socket_path, stop, unsupported
from debate.exceptions import ConfigurationError

HELP = "start, show or stop the warm process of DEBATE_WARM=1"
DESCRIPTION = (
    "With DEBATE_WARM=1, `debate " + "`, `debate ".join(WARM_COMMANDS) + "` run in a fork of a "
    "warm process that has imported everything and rehearsed one offline debate, so each "
    "command starts in about a tenth of a second. This command manages that process."
)


def add_parser(commands: Commands) -> None:
    """Register ``debate warm``."""
    warm = subcommand(commands, "warm", warm_command, HELP, DESCRIPTION)
    warm.add_argument(
        "action",
        choices=("start", "status", "stop"),
        help="start this installation's warm process (if none), show it, or stop every one",
    )
    json_flag(warm, "print the answer as JSON")


def warm_command(args: argparse.Namespace) -> int:
    """Do the action; exit 1 if ``start`` found no warm process running afterwards."""
    refused = unsupported()
    if args.action == "start" and refused is not None:
        raise ConfigurationError(f"debate warm start: {refused}")
    path = socket_path()
    failed = False
    if args.action == "stop":
        stopped = [found for found in servers() if stop(found) is not None]
        answer: dict[str, object] = {"stopped": len(stopped)}
        line = f"stopped {len(stopped)} warm process(es)"
    else:
        pid = ask(path, "ping", start=args.action == "start")
        answer = {"socket": str(path), "pid": pid, "running": pid is not None}
        state = f"running (pid {pid})" if pid is not None else "not running"
        line = f"warm process for this installation: {state}; socket {path}"
        failed = args.action == "start" and pid is None
        if failed:
            line += f"; see {path.with_suffix('.log')}"
    sys.stdout.write((json.dumps(answer) if args.json else line) + "\n")
    return EXIT_RUNTIME if failed else EXIT_OK
