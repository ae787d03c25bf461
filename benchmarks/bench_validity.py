"""Judges against people on real labelled data: UKPConvArg1 and PandaLM.

Run (embedded model):
    python benchmarks/bench_validity.py --data ../shared/datasets --limit 64
Any OpenAI-compatible model:
    python benchmarks/bench_validity.py --data ../shared/datasets --limit 64 \\
        --model gpt-4o-mini [--base-url URL --api-key-env NAME]
The time of `debate validity --target-agreement` on planted panels (no model, no data):
    python benchmarks/bench_validity.py --timing [--items 10000] [--profile]

Prints, per dataset, each judge's and the panel's accuracy against the people's majority
with a Wilson interval, Cohen's kappa, how often it says "tie" when people split vs when
they agree, and alpha among judges beside alpha among people; for PandaLM the published
GPT-3.5 judge on the same items is shown beside. Track records go to a throwaway store
unless --store is given; --cache PATH keeps every completed call, so an interrupted run
resumes where it stopped.

With --timing it instead runs `debate validity FILE --labels L --target-agreement 0.85
--risk 0.10` as a user would (its own process: start, read, cross-fit, report, policy, files
written) on 10,000 planted items (debate.judgments._simulate.planted_pairs) with 4 and 8
judges giving verdicts with their probabilities, against the bound of 10 s on 2 cores, and
the same command without --target-agreement in the same run as the anchor.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from debate import RunConfig  # noqa: E402
from debate.judgments import TrackRecords  # noqa: E402
from debate.quality import calibrate_pairwise  # noqa: E402
from debate.quality._validity import format_report, read_pandalm, read_ukpconvarg  # noqa: E402
from debate.runtime import Run  # noqa: E402
from debate.storage import ResponseCache  # noqa: E402

TIMING_BOUND_S = 10.0
"""Issue 27: `validity --target-agreement` on 10,000 items under 10 s on 2 cores."""
TIMING_TARGET = 0.85


def planted_files(folder: Path, items: int, judges: int) -> tuple[Path, Path]:
    """A planted panel of ``judges`` (accuracy 0.85 down to 0.60, with probabilities) as CSV."""
    import numpy as np

    from debate.judgments import planted_pairs, table_rows, write_judgments

    accuracies = {f"judge-{i + 1}": float(a) for i, a in enumerate(np.linspace(0.85, 0.6, judges))}
    table, people, _ = planted_pairs(items, accuracies, probabilities=True, seed=judges)
    return (
        write_judgments(folder / "judgments.csv", table_rows(table), scale=None),
        write_judgments(folder / "labels.csv", table_rows(people), scale=None),
    )


def validity_command(judgments: Path, labels: Path, out: Path, *extra: str) -> list[str]:
    return ["validity", str(judgments), "--labels", str(labels), "--out", str(out), *extra]


def timed_validity(judgments: Path, labels: Path, out: Path, *extra: str) -> tuple[float, float]:
    """Wall and CPU time of `debate validity` in its own process, as a user runs it."""
    command = [sys.executable, "-m", "debate", *validity_command(judgments, labels, out, *extra)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def profile(judgments: Path, labels: Path, out: Path, *extra: str) -> None:
    """Where the time of one run goes: cProfile, this package's functions by cumulative time."""
    import cProfile
    import logging
    import pstats

    from debate._cli.main import main as debate

    logging.disable(logging.WARNING)  # the latent fit's convergence warnings, once per fold
    profiler = cProfile.Profile()
    with contextlib.redirect_stdout(io.StringIO()):
        profiler.runcall(debate, validity_command(judgments, labels, out, *extra))
    stats = pstats.Stats(profiler, stream=sys.stdout)
    stats.sort_stats("cumulative").print_stats(r"debate/(quality|panel|stats|_cli)/", 25)


def timing(items: int, with_profile: bool) -> None:
    """`validity --target-agreement` against its bound and against plain `validity`."""
    print(f"debate validity on {items:,} planted items, default --bootstrap (1000), 5 folds")
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| judges | with --target-agreement: wall (CPU) | bound | without (anchor) | ratio |")
    print("|---|---|---|---|---|")
    target = ("--target-agreement", str(TIMING_TARGET), "--risk", "0.10")
    with tempfile.TemporaryDirectory() as tmp:
        for judges in (4, 8):
            folder = Path(tmp) / str(judges)
            judgments, labels = planted_files(folder, items, judges)
            policy, policy_cpu = timed_validity(judgments, labels, folder / "policy", *target)
            plain, plain_cpu = timed_validity(judgments, labels, folder / "plain")
            verdict = "within" if policy < TIMING_BOUND_S else "OVER"
            print(
                f"| {judges} | {policy:.2f} s ({policy_cpu:.2f} s) | < {TIMING_BOUND_S:g} s on "
                f"2 cores: {verdict} | {plain:.2f} s ({plain_cpu:.2f} s) | "
                f"{policy / plain:.2f} x |",
                flush=True,
            )
        if with_profile:
            folder = Path(tmp) / "4"
            print("\nwhere the time goes, 4 judges (cProfile, cumulative):")
            profile(folder / "judgments.csv", folder / "labels.csv", folder / "profiled", *target)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "datasets"))
    parser.add_argument("--limit", type=int, default=64)
    parser.add_argument("--model", default="local")
    parser.add_argument("--base-url")
    parser.add_argument("--api-key-env", help='the key variable of --base-url ("" for none)')
    parser.add_argument("--store")
    parser.add_argument("--cache", help="response cache (SQLite): a re-run resumes from it")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--only", choices=["ukpconvarg", "pandalm"])
    parser.add_argument(
        "--timing", action="store_true", help="time validity --target-agreement on planted items"
    )
    parser.add_argument("--items", type=int, default=10_000, help="with --timing (default 10,000)")
    parser.add_argument(
        "--profile", action="store_true", help="with --timing: where the time goes (cProfile)"
    )
    args = parser.parse_args()
    if args.timing:
        timing(args.items, args.profile)
        return
    data = Path(args.data)
    config = RunConfig(
        model=args.model, base_url=args.base_url, api_key_env=args.api_key_env, max_tokens=400
    )
    store = Path(args.store) if args.store else Path(tempfile.mkdtemp()) / "store.sqlite"
    records = TrackRecords(store)
    sets = {
        "ukpconvarg": lambda: read_ukpconvarg(
            data / "ukpconvarg1" / "ukpconvarg1_strict_sample1024_seed0.jsonl", args.limit
        ),
        "pandalm": lambda: read_pandalm(data / "pandalm" / "testset-v1.json", args.limit),
    }
    for name, load in sets.items():
        if args.only and name != args.only:
            continue
        items = load()
        start = time.perf_counter()
        report = asyncio.run(
            calibrate_pairwise(
                items,
                dataset=name,
                config=config,
                records=records,
                concurrency=args.concurrency,
                run=Run(cache=None if args.cache is None else ResponseCache(args.cache)),
            )
        )
        label = (
            f"{name}: {len(items)} items, model {args.model}, {time.perf_counter() - start:.0f} s"
        )
        print(format_report(report, label))
        print(flush=True)


if __name__ == "__main__":
    main()
