"""A large batch's chunks on several threads: every item once, the same bits as one thread."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from debate.stats import _parts
from debate.stats._batched import bootstrap_margin_batch
from debate.stats._parts import MAX_THREADS, each_part, usable_threads


def test_every_item_is_in_exactly_one_part_on_the_pool_s_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_parts, "usable_threads", lambda: 2)
    seen: list[tuple[int, int, str]] = []
    lock = threading.Lock()
    both = threading.Barrier(2, timeout=30)

    def work(part: slice) -> None:
        if part.start < 20:  # the first two parts wait for each other: one on each thread
            both.wait()
        with lock:
            seen.append((part.start, part.stop, threading.current_thread().name))

    each_part(work, 103, 10)
    covered = sorted(i for start, stop, _ in seen for i in range(start, stop))
    assert covered == list(range(103))
    assert {name.split("_")[0] for _, _, name in seen} == {"debate-stats"}
    assert len({name for _, _, name in seen}) == 2


def test_one_part_or_one_thread_runs_on_the_caller_s_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    names: list[str] = []
    each_part(lambda part: names.append(threading.current_thread().name), 5, 10)
    monkeypatch.setattr(_parts, "usable_threads", lambda: 1)
    each_part(lambda part: names.append(threading.current_thread().name), 30, 10)
    assert names == [threading.current_thread().name] * 4


def test_a_part_s_error_is_raised_to_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_parts, "usable_threads", lambda: 2)

    def work(part: slice) -> None:
        if part.start == 20:
            raise ValueError("part 20")

    with pytest.raises(ValueError, match="part 20"):
        each_part(work, 50, 10)


@pytest.mark.parametrize(
    ("cpus", "omp", "expected"),
    [
        (1, None, 1),
        (2, None, 2),
        (16, None, MAX_THREADS),
        (16, "2", 2),
        (2, "8", 2),
        (16, "0", MAX_THREADS),  # not a count of threads: ignored
        (16, "two", MAX_THREADS),
    ],
)
def test_threads_are_the_process_s_cpus_capped_by_omp_num_threads(
    monkeypatch: pytest.MonkeyPatch, cpus: int, omp: str | None, expected: int
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)), raising=False)
    if omp is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", omp)
    assert usable_threads() == expected


@pytest.mark.parametrize("units", [2, 5])
def test_a_threaded_bootstrap_is_bit_for_bit_the_one_thread_bootstrap(
    monkeypatch: pytest.MonkeyPatch, units: int
) -> None:
    """Many small chunks on four threads, against one thread: the same bits, undefined
    replicates (weightless judges) and both orientations (several units a side) included."""
    rng = np.random.default_rng(7)
    items, judges = 300, 5
    x = rng.integers(1, 11, size=(items, judges, units)).astype(np.float64)
    is_pro = np.arange(units) < units // 2 if units > 2 else np.array([True, False])
    w = rng.uniform(0, 2, size=(items, judges))
    w[::7, :3] = 0.0
    monkeypatch.setattr("debate.stats._batched.CHUNK_BYTES", 200_000)  # a few items a chunk
    monkeypatch.setattr(_parts, "usable_threads", lambda: 1)
    alone = bootstrap_margin_batch(x, is_pro, w, seed=11)
    monkeypatch.setattr(_parts, "usable_threads", lambda: 4)
    threaded = bootstrap_margin_batch(x, is_pro, w, seed=11)
    assert np.isnan(alone).sum() == np.isnan(threaded).sum()
    assert alone.tobytes() == threaded.tobytes()
