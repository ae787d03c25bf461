"""``debate batch --workers N``: throughput with 1, 2 and 4 worker processes.

Run: ``python benchmarks/bench_batch_workers.py`` (a few minutes; ``--items`` to shorten).

The OpenAI-compatible test server runs in its own process on 127.0.0.1 and answers every
request after L seconds, all of them concurrently, so with C items in flight its ideal is
C x (calls in flight per item, 1 or 2) / L calls per second -- above what one client process
reaches at C = 256 and L = 0.2 s. Each run is the CLI end to end (``python -m debate
batch``, a fresh process, no cache, no store), and reports:

- model calls/s and items/s, each as a ratio against the 1-worker run of the same
  benchmark and against the server's ideal of the run's own schedule: the calls over the
  critical path of a debate with L per call (calls/item / debate steps x C / L);
- the CPU the client processes (parent and workers) spent per model call, split into the
  processes' start (measured on a tiny batch: mostly imports, about 1 s each) and the
  marginal CPU per call;
- the cost of sharing a rate limit over workers (``--rpm`` set far above the rate, so it
  never waits: the difference is the round trip to the parent per call) and a budget
  (``--max-tokens`` far above the use: the shared ledger).

The server's own CPU per request is measured too (it shares the machine): on a machine
with fewer cores than client processes + server, more workers cannot be faster; the figures
say how far each part went.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SERVER = """
import json, sys, time, resource
sys.path.insert(0, {root!r})
from tests.openai_server import FakeOpenAIServer, Reply, request_schema
from debate.models.test import fill_schema
import random
replies = {{}}
def responder(body):
    # one reply per schema, made once: the server's CPU per request stays small
    key = json.dumps(request_schema(body), sort_keys=True)
    if key not in replies:
        replies[key] = json.dumps(fill_schema(request_schema(body), random.Random(0)))
    return Reply(content=replies[key])
with FakeOpenAIServer(latency={latency}, responder=responder) as server:
    print(server.base_url, flush=True)
    for line in sys.stdin:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        print(usage.ru_utime + usage.ru_stime, len(server.records), flush=True)
"""

DEBATE_STEPS = 4
"""A debate's critical path in calls: openings, cross-examination, closings, judges."""


def load() -> str:
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def batch_file(folder: Path, items: int) -> Path:
    path = folder / "batch.jsonl"
    rows = [{"id": f"d{i}", "topic": f"Should team {i} adopt the plan?"} for i in range(items)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def run(
    batch: Path, base_url: str, out: Path, workers: int, concurrency: int, *extra: str
) -> tuple[float, float, int, int]:
    """Wall seconds, client CPU seconds, model calls and items ok of one CLI run."""
    argv = [sys.executable, "-m", "debate", "batch", str(batch), "--model", "bench"]
    argv += ["--base-url", base_url, "--api-key-env", "", "--out", str(out), "--quiet"]
    argv += ["--no-cache", "--no-store", "--concurrency", str(concurrency)]
    argv += ["--workers", str(workers), *extra]
    cpu0, start = children_cpu(), time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - start, children_cpu() - cpu0
    if done.returncode != 0:
        raise SystemExit(f"batch failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    return wall, cpu, sum(x["calls"] or 0 for x in lines), sum(x["status"] == "ok" for x in lines)


def ledger_cost(n: int = 100_000) -> tuple[float, float]:
    """Microseconds of one hold + settle on a budget in this process and in shared memory."""
    import multiprocessing

    sys.path.insert(0, str(ROOT))
    from debate.models._base import TokenUsage
    from debate.runtime._budget import Budget, SharedLedger
    from debate.runtime._pricing import PriceTable

    prices, usage = PriceTable(models={}), TokenUsage(prompt_tokens=900, completion_tokens=100)
    times = []
    for ledger in (None, SharedLedger(multiprocessing.get_context("spawn"))):
        budget = Budget(max_tokens=10**12, ledger=ledger)
        start = time.perf_counter()
        for _ in range(n):
            budget.settle(budget.hold("m", 1000, 256, prices), usage, prices)
        times.append((time.perf_counter() - start) / n * 1e6)
    return times[0], times[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--workers", default="1,2,4")
    args = parser.parse_args()
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER.format(root=str(ROOT), latency=args.latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None
    base_url = server.stdout.readline().strip()

    def server_cpu() -> tuple[float, int]:
        server.stdin.write("\n")  # type: ignore[union-attr]
        server.stdin.flush()  # type: ignore[union-attr]
        cpu, requests = server.stdout.readline().split()  # type: ignore[union-attr]
        return float(cpu), int(requests)

    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            batch = batch_file(folder, args.items)
            (folder / "warm").mkdir()
            warm = batch_file(folder / "warm", 2)
            run(warm, base_url, folder / "warm-out", 1, 2)  # imports and page cache
            tiny = batch_file(folder / "warm", 2 * max(int(w) for w in args.workers.split(",")))
            plan = [(int(w), ()) for w in args.workers.split(",")]
            plan += [(2, ("--rpm", str(10**9))), (2, ("--max-tokens", str(10**12)))]
            for n, (workers, extra) in enumerate(plan):
                if workers > args.concurrency:
                    continue
                # a tiny batch first: its CPU is mostly the processes' start (imports)
                _, small_cpu, small_calls, _ = run(
                    tiny, base_url, folder / f"tiny{n}", workers, args.concurrency, *extra
                )
                s_cpu0, s_req0 = server_cpu()
                wall, cpu, calls, ok = run(
                    batch, base_url, folder / f"out{n}", workers, args.concurrency, *extra
                )
                s_cpu1, s_req1 = server_cpu()
                marginal = (cpu - small_cpu) / (calls - small_calls)
                fixed = small_cpu - marginal * small_calls
                server_ms = (s_cpu1 - s_cpu0) / max(s_req1 - s_req0, 1) * 1000
                rows.append((workers, extra, wall, cpu, calls, ok, marginal, fixed, server_ms))
                print(f"  ran {workers} workers {' '.join(extra)}: {wall:.1f} s ({load()})")
    finally:
        server.stdin.close()
        server.wait(10)
    local_us, shared_us = ledger_cost()
    latency, concurrency = args.latency, args.concurrency
    print(
        f"\nserver latency L = {latency * 1000:.0f} ms, concurrency C = {concurrency} items, "
        f"{args.items} debates, {os.cpu_count()} CPUs, {load()}"
    )
    base_calls = base_items = None
    for workers, extra, wall, cpu, calls, ok, marginal, fixed, server_ms in rows:
        rate, items = calls / wall, ok / wall
        ideal = calls / args.items / DEBATE_STEPS * concurrency / latency
        if not extra and workers == 1:
            base_calls, base_items = rate, items
        label = f"{workers} worker{'s' if workers > 1 else ''} {' '.join(extra)}"
        vs_calls = f"{rate / base_calls:.2f}" if base_calls else "-"
        vs_items = f"{items / base_items:.2f}" if base_items else "-"
        print(
            f"{label}\n  {rate:7.1f} calls/s = {vs_calls} x 1 worker = {rate / ideal:.3f} x the "
            f"server's ideal {ideal:.0f}; {items:.2f} items/s = {vs_items} x 1 worker; "
            f"{ok}/{args.items} ok\n  client CPU {cpu / calls * 1000:.2f} ms/call in all = "
            f"{fixed:.2f} s to start the processes + {marginal * 1000:.2f} ms/call; server "
            f"CPU {server_ms:.2f} ms/request"
        )
    print(
        f"budget hold + settle: {local_us:.2f} us in one process, {shared_us:.2f} us on the "
        f"shared ledger (+{shared_us - local_us:.2f} us per call = "
        f"{(shared_us - local_us) / 1000 / 2:.4f} x the 2 ms per call bound)"
    )


if __name__ == "__main__":
    main()
