"""Decide and validate from recorded judgments, at scale, against a plain numpy majority vote.

    python benchmarks/bench_decide.py [--items 100000] [--judges 8] [--validity-items 10000]

Measures, on planted panels (debate.judgments._simulate):

* ``decide`` on N items x J judges, verdict tables and score tables (two options, one
  dimension): wall time from a table in memory, and from the CSV file (read included);
  peak memory (tracemalloc) at N/4, N/2 and N, to show it grows linearly;
* ``validity`` with 5 folds and 1,000 bootstrap replicates on the validity items;
* the anchor: a plain numpy majority vote over the same verdicts, measured in the same
  run, and every figure's ratio to it.

Bounds from issue 18: decide 100,000 x 8 under 10 s; validity 10,000 items under 60 s. Issue
30 keeps 10 s for scores in memory and allows 15 s for scores read from CSV (1.6 M rows).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from debate.judgments import (  # noqa: E402
    _arrow_csv,
    decide_judgments,
    planted_scores,
    planted_verdicts,
    table_rows,
    validate_judgments,
    write_judgments,
)
from debate.records import VerdictTable  # noqa: E402

DECIDE_BOUND_S = 10.0
SCORES_CSV_BOUND_S = 15.0
VALIDITY_BOUND_S = 60.0


def accuracies(judges: int) -> dict[str, float]:
    """A spread of judges from good to poor, the last one adversarial."""
    good = np.linspace(0.85, 0.6, judges - 1)
    return {**{f"judge-{i + 1}": float(a) for i, a in enumerate(good)}, f"judge-{judges}": 0.25}


def noise(judges: int) -> dict[str, float]:
    return {f"judge-{i + 1}": float(s) for i, s in enumerate(np.linspace(0.4, 1.6, judges))}


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def decided(source: Any, items: int) -> float:
    """Seconds of one ``decide``, checked to decide every item; its result is not kept.

    Each decide starts as the ``debate decide`` command does, with no earlier result in
    memory: holding the last measurement's 100,000 decisions (over a gigabyte of records)
    made the next decide 2-3 s slower on the 2-core machine, a cost of the benchmark's own.
    """
    seconds, result = timed(lambda: decide_judgments(source))
    assert len(result.decisions) == items, "every item is decided"
    return seconds


def numpy_majority(table: VerdictTable) -> float:
    """The anchor: items x judges verdict codes, plurality per item, in plain numpy."""
    start = time.perf_counter()
    counts = np.zeros((len(table.items), 3), dtype=np.int64)
    np.add.at(counts, (table.item, table.verdict), 1)
    counts.argmax(axis=1)
    return time.perf_counter() - start


def csv_reader() -> str:
    """Which reader splits a large plain CSV file here (pyarrow is the ``arrow`` extra)."""
    if not _arrow_csv.arrow_available():
        return "the csv module (pyarrow is not installed: pip install -e '.[arrow]')"
    import pyarrow

    return f"pyarrow {pyarrow.__version__} (the arrow extra), from {_arrow_csv.ARROW_FROM:,} chars"


@contextmanager
def csv_module_only() -> Iterator[None]:
    """Large files read by the csv module, as without pyarrow."""
    found = _arrow_csv.ARROW_FROM
    _arrow_csv.ARROW_FROM = sys.maxsize
    try:
        yield
    finally:
        _arrow_csv.ARROW_FROM = found


def decide_rows(verdicts: Any, scores: Any, n: int) -> list[tuple[str, float, float | None]]:
    """Each table decided in memory and from its CSV file (and by the csv module alone)."""
    rows: list[tuple[str, float, float | None]] = []
    for name, table in (("verdicts", verdicts), ("scores", scores)):
        seconds = decided(table, n)
        rows.append((f"decide {name}, table in memory", seconds, DECIDE_BOUND_S))
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"{name}.csv"
            write_judgments(path, table_rows(table), scale=getattr(table, "scale", None))
            seconds = decided(path, n)
            bound = SCORES_CSV_BOUND_S if name == "scores" else DECIDE_BOUND_S
            rows.append((f"decide {name}, from CSV ({table.rows:,} rows)", seconds, bound))
            if _arrow_csv.arrow_available():  # the same file by the csv module, for comparison
                with csv_module_only():
                    seconds = decided(path, n)
                rows.append((f"decide {name}, from CSV by the csv module", seconds, None))
    return rows


def peak_mb(fn: Callable[[], Any]) -> float:
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--judges", type=int, default=8)
    parser.add_argument("--validity-items", type=int, default=10_000)
    args = parser.parse_args()
    n, j = args.items, args.judges

    verdicts, _ = planted_verdicts(n, accuracies(j), seed=1)
    scores, _ = planted_scores(n, ("x", "y"), noise(j), seed=1)
    anchor = numpy_majority(verdicts)
    print(f"anchor: numpy majority vote on {n:,} items x {j} judges: {anchor * 1e3:.1f} ms")

    print(f"CSV reader: {csv_reader()}")

    rows = decide_rows(verdicts, scores, n)

    for name in ("verdicts", "scores"):
        mem = []
        for share in (4, 2, 1):
            sub = _verdicts(n // share, j) if name == "verdicts" else _scores(n // share, j)
            mem.append(peak_mb(lambda s=sub: decide_judgments(s)))
        print(
            f"peak memory, decide {name} at {n // 4:,} / {n // 2:,} / {n:,} items: "
            + " / ".join(f"{m:.0f} MB" for m in mem)
            + f" (x{mem[2] / mem[0]:.2f} for x4 items)"
        )

    m = args.validity_items
    judged, people = planted_verdicts(m, accuracies(j), seed=2)
    seconds, validity = timed(lambda: validate_judgments(judged, people, folds=5, n_boot=1000))
    rows.append(
        (f"validity verdicts, {m:,} items, 5 folds, 1,000 replicates", seconds, VALIDITY_BOUND_S)
    )
    judged_s, people_s = planted_scores(m, ("x", "y"), noise(j), seed=2)
    seconds, _ = timed(lambda: validate_judgments(judged_s, people_s, folds=5, n_boot=1000))
    rows.append(
        (f"validity scores, {m:,} items, 5 folds, 1,000 replicates", seconds, VALIDITY_BOUND_S)
    )

    width = max(len(r[0]) for r in rows)
    print(f"\n{'measure'.ljust(width)}  seconds   x anchor   bound")
    for label, seconds, bound in rows:
        verdict = "" if bound is None else ("ok" if seconds < bound else "OVER")
        ratio = seconds / anchor
        limit = "" if bound is None else f"< {bound:g} s {verdict}"
        print(f"{label.ljust(width)}  {seconds:7.2f}  {ratio:9.0f}   {limit}")
    return 0 if all(b is None or s < b for _, s, b in rows) else 1


def _scores(n: int, judges: int) -> Any:
    return planted_scores(n, ("x", "y"), noise(judges), seed=1)[0]


def _verdicts(n: int, judges: int) -> Any:
    return planted_verdicts(n, accuracies(judges), seed=1)[0]


if __name__ == "__main__":
    raise SystemExit(main())
