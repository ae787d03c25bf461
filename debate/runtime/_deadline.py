"""A wall-clock budget for one debate, and concurrent stages that never leave a task behind."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Any

from debate.exceptions import DeadlineExceeded


async def gather_or_cancel(*calls: Awaitable[Any]) -> list[Any]:
    """Like ``asyncio.gather``, but the first failure cancels and awaits the others."""
    tasks = [asyncio.ensure_future(c) for c in calls]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


class Deadline:
    """A wall-clock budget shared by every stage of one debate."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self._end = None if seconds is None else time.monotonic() + seconds

    def remaining(self) -> float | None:
        """Seconds left, or None without a deadline."""
        return None if self._end is None else max(0.0, self._end - time.monotonic())

    async def run(self, stage: str, *calls: Awaitable[Any]) -> list[Any]:
        """Run ``calls`` concurrently; if one fails or the deadline passes, cancel the rest.

        No task outlives the stage: a failure, a timeout or Ctrl-C cancels and awaits
        every sibling before the error propagates.
        """
        try:
            return await asyncio.wait_for(gather_or_cancel(*calls), self.remaining())
        except asyncio.TimeoutError as exc:
            raise DeadlineExceeded(
                f"the debate passed its deadline of {self.seconds:g} s during the {stage}; "
                "completed calls are kept in the response cache: run the same command again "
                "to continue"
            ) from exc
