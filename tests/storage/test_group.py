"""Group commit: puts waiting together share a write; each resumes once its own is written."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from debate.models import TokenUsage
from debate.storage import CallCost, ResponseCache
from debate.storage._group import GroupCommit


def test_puts_made_while_one_is_written_share_the_next_write() -> None:
    batches: list[list[int]] = []
    first = threading.Event()
    release = threading.Event()

    def write(items: Sequence[int]) -> list[int]:
        if not batches:
            first.set()
            release.wait(5)
        batches.append(list(items))
        return [10 * item for item in items]

    group: GroupCommit[int, int] = GroupCommit(write)

    async def main() -> list[int]:
        lead = asyncio.create_task(group.put(0))
        await asyncio.to_thread(first.wait, 5)  # the first write is under way
        rest = [asyncio.create_task(group.put(k)) for k in range(1, 6)]
        await asyncio.sleep(0.01)
        release.set()
        return await asyncio.gather(lead, *rest)

    assert asyncio.run(main()) == [0, 10, 20, 30, 40, 50]  # each its own result
    assert batches == [[0], [1, 2, 3, 4, 5]]


def test_a_failing_item_fails_its_own_put_only() -> None:
    written: list[int] = []

    def write(items: Sequence[int]) -> list[None]:
        if 3 in items:
            raise ValueError("no 3")
        written.extend(items)
        return [None] * len(items)

    group: GroupCommit[int, None] = GroupCommit(write)

    async def main() -> list[BaseException | None]:
        return await asyncio.gather(*(group.put(k) for k in range(6)), return_exceptions=True)

    outcomes = asyncio.run(main())
    assert [type(o).__name__ for o in outcomes] == ["NoneType"] * 3 + ["ValueError"] + [
        "NoneType"
    ] * 2
    assert sorted(written) == [0, 1, 2, 4, 5]


@pytest.mark.parametrize("replace", [False, True])
def test_put_async_stores_what_put_stores(tmp_path: Path, replace: bool) -> None:
    usage = TokenUsage(prompt_tokens=5, completion_tokens=3, cached_tokens=1)
    cost = CallCost(attempts=2, answered=2, usage=usage)
    sync, grouped = ResponseCache(tmp_path / "a.sqlite"), ResponseCache(tmp_path / "b.sqlite")
    for key in ("k1", "k2"):
        sync.put(key, "m", f"old {key}", usage, cost)
        asyncio.run(grouped.put_async(key, "m", f"old {key}", usage, cost))

    async def many() -> None:
        await asyncio.gather(
            *(grouped.put_async(f"k{k}", "m", f"new {k}", usage, replace=replace) for k in range(4))
        )

    for k in range(4):
        sync.put(f"k{k}", "m", f"new {k}", usage, replace=replace)
    asyncio.run(many())
    assert [grouped.get(f"k{k}") for k in range(4)] == [sync.get(f"k{k}") for k in range(4)]
    sync.close()
    grouped.close()


def test_a_put_after_the_loops_executor_shut_down_is_written_all_the_same() -> None:
    written: list[int] = []

    def write(items: Sequence[int]) -> list[None]:
        written.extend(items)
        return [None] * len(items)

    group: GroupCommit[int, None] = GroupCommit(write)

    async def main() -> None:
        await asyncio.get_running_loop().shutdown_default_executor()
        await group.put(7)

    asyncio.run(main())
    assert written == [7]


def test_a_write_takes_at_most_most_items_the_rest_wait_for_the_next() -> None:
    batches: list[list[int]] = []

    def write(items: Sequence[int]) -> list[None]:
        batches.append(list(items))
        return [None] * len(items)

    group: GroupCommit[int, None] = GroupCommit(write, most=2)

    async def main() -> None:
        await asyncio.gather(*(group.put(k) for k in range(5)))

    asyncio.run(main())
    assert [k for batch in batches for k in batch] == list(range(5))
    assert max(len(batch) for batch in batches) <= 2
