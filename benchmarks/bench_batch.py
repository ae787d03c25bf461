"""``debate batch`` end to end: one process, forked processes and Ray, side by side in one run.

Run: ``python benchmarks/bench_batch.py`` (a few minutes; ``--items`` to shorten,
``--engine local``, ``processes`` or ``ray`` (comma-separated) for some engines only,
``--workers`` for the processes' and Ray's count).

The OpenAI-compatible test server runs in its own process on 127.0.0.1 and answers every
request after L seconds, all of them concurrently, so with C items in flight its ideal is
C x (calls in flight per item, 1 or 2) / L calls per second -- above what one client process
reaches at C = 256 and L = 0.2 s. Each run is the CLI end to end (``python -m debate
batch``, a fresh process, no cache, no store; ``--engine processes`` forks it into
``--workers`` processes; ``--engine ray`` starts a local Ray of ``--workers`` CPUs and stops
it), and reports:

- model calls/s and items/s, each as a ratio against the one-process run of the same
  benchmark and against the server's ideal of the run's own schedule: the calls over the
  critical path of a debate with L per call (calls/item / debate steps x C / L);
- the CPU the client side spent per model call (the CLI and every process it started and
  stopped: Ray's workers and its own services), split into the start (measured on a tiny
  batch: imports, and for Ray its cluster and actors) and the marginal CPU per call;
- the cost of the cluster's one rate limit (``--rpm`` set far above the rate, so it never
  waits: the difference is the round trip to the limiter actor per call) and one budget
  (``--max-tokens`` far above the use: a round trip to the ledger actor per call).

The server's own CPU per request is measured too (it shares the machine). On a machine with
fewer cores than client processes + server (2 here), Ray cannot be faster than one process:
the figures then show its overhead, not its scaling.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SERVER = """
import json, sys, time, resource
sys.path.insert(0, {root!r})
from tests.support.openai_server import FakeOpenAIServer, Reply, request_schema
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


TICK = os.sysconf("SC_CLK_TCK")


class TreeCpu:
    """CPU seconds of a process and of every process it starts, however they end.

    Ray's processes (its services, its workers under the raylet) are not all reaped by
    the CLI, so the CLI's own child usage misses them: every process in the tree is
    sampled from /proc every 0.2 s and its last sample kept (a process's last < 0.2 s is
    missed). Linux only.
    """

    def __init__(self, root: int) -> None:
        self.root = root
        self.seen: dict[tuple[int, int], float] = {}
        """(pid, start time) -> its user + system CPU seconds at the last sample."""

    def sample(self) -> None:
        parents: dict[int, int] = {}
        stats: dict[int, list[str]] = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                text = (entry / "stat").read_text()
            except OSError:
                continue
            fields = text[text.rindex(")") + 2 :].split()
            pid = int(entry.name)
            parents[pid] = int(fields[1])
            stats[pid] = fields
        tree, frontier = {self.root}, [self.root]
        children: dict[int, list[int]] = {}
        for pid, parent in parents.items():
            children.setdefault(parent, []).append(pid)
        while frontier:
            for child in children.get(frontier.pop(), []):
                if child not in tree:
                    tree.add(child)
                    frontier.append(child)
        for pid in tree & stats.keys():
            fields = stats[pid]  # utime, stime are fields 14 and 15 of stat (11, 12 here)
            self.seen[(pid, int(fields[19]))] = (int(fields[11]) + int(fields[12])) / TICK

    def total(self) -> float:
        return sum(self.seen.values())


def batch_file(folder: Path, items: int) -> Path:
    path = folder / "batch.jsonl"
    rows = [{"id": f"d{i}", "topic": f"Should team {i} adopt the plan?"} for i in range(items)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


Engine = tuple[str, int | None]
"""``--engine`` and its ``--workers`` (None for one process)."""


def run(
    batch: Path, base_url: str, out: Path, engine: Engine, concurrency: int, *extra: str
) -> tuple[float, float, int, int]:
    """Wall seconds, client CPU seconds, model calls and items ok of one CLI run."""
    argv = [sys.executable, "-m", "debate", "batch", str(batch), "--model", "bench"]
    argv += ["--base-url", base_url, "--api-key-env", "", "--out", str(out), "--quiet"]
    argv += ["--no-cache", "--no-store", "--concurrency", str(concurrency)]
    argv += ["--engine", engine[0]]
    if engine[1] is not None:
        argv += ["--workers", str(engine[1])]
    argv += list(extra)
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    cpu = TreeCpu(proc.pid)
    while proc.poll() is None:
        cpu.sample()
        time.sleep(0.2)
    stdout, stderr = proc.communicate()
    wall = time.perf_counter() - start
    done = subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)
    cpu_s = cpu.total()
    if done.returncode != 0:
        raise SystemExit(f"batch failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    return wall, cpu_s, sum(x["calls"] or 0 for x in lines), sum(x["status"] == "ok" for x in lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument(
        "--engine", default="local,processes,ray", help="some of local, processes, ray"
    )
    parser.add_argument(
        "--workers", type=int, default=2, help="the processes, and Ray's workers (and CPUs)"
    )
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
            run(warm, base_url, folder / "warm-out", ("local", None), 2)  # imports, page cache
            tiny = batch_file(folder / "warm", 2 * args.workers)
            engines = args.engine.split(",")
            plan: list[tuple[Engine, tuple[str, ...]]] = []
            if "local" in engines:
                plan.append((("local", None), ()))
            if "processes" in engines:
                plan.append((("processes", args.workers), ()))
            if "ray" in engines:
                w = ("ray", args.workers)
                plan += [(w, ()), (w, ("--rpm", str(10**9))), (w, ("--max-tokens", str(10**12)))]
            for n, (workers, extra) in enumerate(plan):
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
                print(f"  ran {label(workers, extra)}: {wall:.1f} s ({load()})", flush=True)
    finally:
        server.stdin.close()
        server.wait(10)
    latency, concurrency = args.latency, args.concurrency
    print(
        f"\nserver latency L = {latency * 1000:.0f} ms, concurrency C = {concurrency} items, "
        f"{args.items} debates, {os.cpu_count()} CPUs, {load()}"
    )
    base_calls = base_items = None
    for workers, extra, wall, cpu, calls, ok, marginal, fixed, server_ms in rows:
        rate, items = calls / wall, ok / wall
        ideal = calls / args.items / DEBATE_STEPS * concurrency / latency
        if workers[1] is None:
            base_calls, base_items = rate, items
        vs_calls = f"{rate / base_calls:.2f}" if base_calls else "-"
        vs_items = f"{items / base_items:.2f}" if base_items else "-"
        print(
            f"{label(workers, extra)}\n  {rate:7.1f} calls/s = {vs_calls} x one process = "
            f"{rate / ideal:.3f} x the server's ideal {ideal:.0f}; {items:.2f} items/s = "
            f"{vs_items} x one process; "
            f"{ok}/{args.items} ok\n  client CPU {cpu / calls * 1000:.2f} ms/call in all = "
            f"{fixed:.2f} s to start the processes + {marginal * 1000:.2f} ms/call; server "
            f"CPU {server_ms:.2f} ms/request"
        )


def label(engine: Engine, extra: tuple[str, ...]) -> str:
    """One process, or the processes or Ray with their workers, and the run's extra flags."""
    name = "one process" if engine[1] is None else f"--engine {engine[0]} --workers {engine[1]}"
    return " ".join([name, *extra])


if __name__ == "__main__":
    main()
