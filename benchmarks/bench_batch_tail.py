"""``debate batch`` of 40 debates: the command's own cost around the model calls.

Run: ``python benchmarks/bench_batch_tail.py`` (about a minute; ``--runs`` to repeat).

The model server (``benchmarks/model_server.py``: aiohttp, one event loop, every reply after
L = 0.2 s) runs in its own process; each batch is ``python -m debate batch`` in its own
process (``--concurrency 64``, no cache, no store), so all 40 debates are in flight at once
and the batch's critical path is one debate's: 4 steps of L (openings, cross-examination,
closings, the judges).

The command's start is measured in the same run as the wall time of a one-item batch less
its critical path: everything the command pays whatever the batch's size (interpreter and
imports, the pool, one item's files, the summary). An empty batch would measure less but is
refused (``no items``), and ``debate --version`` answers before any command is imported; its
wall time is printed too, as the interpreter's floor. The bound: the 40-item batch
<= 1.3 x (4L + start), with ``--engine processes`` (the command forked over this machine's
cores, each copy with its share of the items); ``--engine local`` (one process) is measured
in the same run beside it, each engine against its own start.

Each run is split at the server's clock: before the first request arrives, the first request
to the last reply (the critical path stretched by the client), and after the last reply (the
items' files and the summary). The CLI's CPU seconds (its own rusage) are the figure least
moved by the machine's load; the load average is printed with each.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from child_env import child_env

ROOT = Path(__file__).resolve().parents[1]
STEPS = 4
"""A debate's critical path in calls: openings, cross-examination, closings, judges."""
BOUND = 1.3
ENGINES = ("local", "processes")
"""One process, and the command forked over this machine's cores (the bound is its)."""
ENV = child_env()
"""The CLI's environment: bytecode cached as an installed package's is (the warm-up writes it)."""


def load() -> str:
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def batch_file(folder: Path, items: int) -> Path:
    path = folder / f"batch{items}.jsonl"
    rows = [{"id": f"d{i}", "topic": f"Should team {i} adopt the plan?"} for i in range(items)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def times(base_url: str) -> dict[str, float]:
    """The server's first request and last reply since the last call (and reset them)."""
    url = base_url.removesuffix("/v1") + "/served?reset=1"
    with urllib.request.urlopen(url) as reply:
        return json.loads(reply.read())  # type: ignore[no-any-return]


def cli(argv: list[str]) -> tuple[float, float, float]:
    """Start (wall clock), wall seconds and CPU seconds of one CLI process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started, start = time.time(), time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, env=ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{argv[3:5]} failed ({done.returncode}): {done.stderr[-500:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return started, wall, cpu


def batch(
    path: Path, base_url: str, out: Path, concurrency: int, engine: str = "local"
) -> dict[str, float]:
    """One ``debate batch`` run: wall, CPU and its phases at the server's clock."""
    argv = [sys.executable, "-m", "debate", "batch", str(path), "--model", "bench"]
    argv += ["--base-url", base_url, "--api-key-env", "", "--out", str(out), "--quiet"]
    argv += ["--no-cache", "--no-store", "--concurrency", str(concurrency), "--engine", engine]
    times(base_url)
    started, wall, cpu = cli(argv)
    seen = times(base_url)
    first, last = seen["first_request"] - started, seen["last_reply"] - started
    return {"wall": wall, "cpu": cpu, "first": first, "spread": last - first, "after": wall - last}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    path = STEPS * args.latency
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "benchmarks" / "model_server.py"), str(args.latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None
    base_url = server.stdout.readline().strip()
    worst = dict.fromkeys(ENGINES, 0.0)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            one, many = batch_file(folder, 1), batch_file(folder, args.items)
            batch(one, base_url, folder / "warm", 1)  # page cache, compiled bytecode
            print(
                f"L = {args.latency * 1000:.0f} ms, critical path 4L = {path:.2f} s, "
                f"{args.items} debates at --concurrency {args.concurrency}, "
                f"{os.cpu_count()} CPUs"
            )
            for n in range(args.runs):
                _, version, version_cpu = cli([sys.executable, "-m", "debate", "--version"])
                print(f"run {n + 1} ({load()})")
                print(f"  debate --version: {version:.3f} s wall, {version_cpu:.3f} s CPU")
                for engine in ENGINES:
                    ratio = engine_run(base_url, folder / f"{engine}{n}", (one, many), engine, args)
                    worst[engine] = max(worst[engine], ratio)
    finally:
        server.stdin.close()
        server.wait(10)
    for engine, ratio in worst.items():
        verdict = "ok" if ratio <= BOUND else "ABOVE the bound"
        print(f"--engine {engine}: worst ratio {ratio:.3f} x: {verdict}")
    raise SystemExit(0 if worst["processes"] <= BOUND else 1)


def engine_run(
    base_url: str, folder: Path, files: tuple[Path, Path], engine: str, args: argparse.Namespace
) -> float:
    """One item, then the batch, with ``--engine engine``; prints both; the batch's ratio."""
    path = STEPS * args.latency
    small = batch(files[0], base_url, folder / "one", args.concurrency, engine)
    big = batch(files[1], base_url, folder / "many", args.concurrency, engine)
    start = small["wall"] - path
    ratio = big["wall"] / (path + start)
    print(f"  --engine {engine}")
    for name, row in (("1 item", small), (f"{args.items} items", big)):
        print(
            f"  {name:>9}: {row['wall']:.3f} s wall, CPU {row['cpu']:.3f} s | "
            f"first request at {row['first']:.3f} s, last reply "
            f"{row['spread']:.3f} s later, then {row['after']:.3f} s"
        )
    print(
        f"  start = 1 item - 4L = {start:.3f} s; {args.items} items = {ratio:.3f} "
        f"x (4L + start) (bound <= {BOUND}); CPU per item beyond the first "
        f"{(big['cpu'] - small['cpu']) / (args.items - 1) * 1000:.1f} ms"
    )
    return ratio


if __name__ == "__main__":
    main()
