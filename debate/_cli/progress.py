"""Progress on stderr while a command works: lines for people, or JSON events.

stdout is left to the result, so ``--json`` output stays one document whatever the progress.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from debate.runtime import Event, EventHandler, Planned, StepFinished, event_record


class ProgressPrinter:
    """Progress lines on stderr: the plan first, then one line per finished step.

    The plan line comes before any model is loaded or called, so a run on a slow machine
    says at once what it is about to do; each step's line then counts the steps done of the
    plan and gives a running estimate of the time left (the mean time per step so far).
    """

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.total: int | None = None
        self.done = 0

    def __call__(self, event: Event) -> None:
        """Print the plan, or a line for a finished step."""
        if isinstance(event, Planned):
            self.total = event.total
            items = f" over {event.items} items" if event.items is not None else ""
            self._write(f"plan: {event.total} model calls{items}; a line as each one finishes")
            return
        if not isinstance(event, StepFinished):
            return
        self.done += 1
        total = time.perf_counter() - self.start
        busy = event.model_seconds or event.elapsed
        rate = event.completion_tokens / busy if busy > 0 else 0.0
        step = event.phase.replace("_", " ")
        if event.round is not None:
            step += f" {event.round}"
        status = "ok" if event.ok else f"FAILED ({event.detail})"
        retry = f", {event.attempts} attempts" if event.attempts > 1 else ""
        self._write(
            f"[{total:7.1f}s]{self._count(total)} {step:<20} {event.actor:<12} {status}  "
            f"{event.elapsed:5.1f}s  {event.completion_tokens} tok  {rate:5.1f} tok/s{retry}"
        )

    def _count(self, elapsed: float) -> str:
        """`` k/n, ~Ns left`` once there is a plan; nothing without one."""
        if self.total is None:
            return ""
        left = max(self.total - self.done, 0)
        eta = f", ~{elapsed / self.done * left:.0f}s left" if left else ""
        return f" {self.done}/{self.total}{eta}"

    @staticmethod
    def _write(line: str) -> None:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


class JsonlProgress:
    """``--progress jsonl``: every event as one JSON object per line on stderr.

    Each line has ``type`` (plan, start, retry, finish, item_finish) and ``ts``, then the
    event's fields (a call's ``phase`` and ``actor`` among them); see
    :mod:`debate.runtime._events`. stdout is left to the result.
    """

    def __call__(self, event: Event) -> None:
        """Write the event's line."""
        sys.stderr.write(json.dumps(event_record(event)) + "\n")
        sys.stderr.flush()


def progress_flag(parser: argparse.ArgumentParser) -> None:
    """``--progress text|jsonl``, for the commands that report progress."""
    parser.add_argument(
        "--progress",
        choices=["text", "jsonl"],
        default="text",
        help="progress on stderr as lines for people (text, default) or as JSON events "
        "(jsonl: plan, start, retry, finish); --quiet silences both",
    )


def progress(args: argparse.Namespace) -> EventHandler | None:
    """The progress handler ``--progress`` chose, or None with ``--quiet``."""
    if args.quiet:
        return None
    return JsonlProgress() if getattr(args, "progress", "text") == "jsonl" else ProgressPrinter()


def announce(
    handler: EventHandler | None, command: str, total: int, items: int | None = None
) -> None:
    """Send the plan (how many calls the command will make) before the first call."""
    if handler is not None:
        handler(Planned(command=command, total=total, items=items))
