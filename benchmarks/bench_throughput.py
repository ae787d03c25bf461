"""Throughput against an OpenAI-compatible model server with a fixed latency.

Run: ``python benchmarks/bench_throughput.py`` (about two minutes).

The server (``benchmarks/model_server.py``, aiohttp on one event loop) runs in its own
process on 127.0.0.1 and answers every request after L seconds, concurrently. Reported, each
as a ratio against its bound measured in the same run:

1. one default debate: wall time vs the critical path 4 x L (openings, cross-examination,
   closings, judges), and vs the reference article's order (every call one after another);
2. many debates at concurrency C (64 and 256): calls/s vs the server's ideal C / L, and vs a
   bare aiohttp client (no framework) sending the same judge request at the same concurrency
   to the same server: what this machine and server allow, so the client's share shows;
3. the framework's own CPU time per model call (client process CPU time / calls), beside the
   bare client's (its HTTP alone: the floor under any framework's);
4. ``debate run`` end to end, the command in its own process as a user runs it: wall time
   vs the critical path 4 x L, and against a server with no latency (the framework's own
   time) split into start (interpreter, imports, flags, config, store), set-up (the model
   client: the openai SDK), calls, and after the last call (statistics, reports, store,
   exit), beside a bare interpreter's start measured in the same run, and the imports a run
   needs before its first request leaves, each in its own process, against the time the
   1.6 x bound leaves beyond 4L (0.6 x 4L).
   ``--cli-only`` runs this part alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


from child_env import child_env  # noqa: E402
from model_server import bare_client_rate  # noqa: E402

from debate import RunConfig, run_debate  # noqa: E402
from debate._cli.warm_client import stop  # noqa: E402
from debate.api import ModelPool  # noqa: E402
from debate.models import Message, Model, ModelSettings, Reply, ReplySchema  # noqa: E402
from debate.runtime import Run  # noqa: E402


class Sequential:
    """Every call waits for the previous one: the reference article's order."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.lock = asyncio.Lock()

    @property
    def name(self) -> str:
        return self.inner.name

    async def complete(
        self, messages: list[Message], schema: ReplySchema, settings: ModelSettings | None = None
    ) -> Reply:
        async with self.lock:
            return await self.inner.complete(messages, schema, settings)


async def debates(n: int, concurrency: int, base_url: str, sequential: bool = False) -> int:
    config = RunConfig(model="bench", base_url=base_url, api_key_env="", max_tokens=256)
    pool = ModelPool(config)
    model: Model = pool.get("bench")
    if sequential:
        model = Sequential(model)
    gate = asyncio.Semaphore(concurrency)
    calls = 0

    async def one(i: int) -> None:
        nonlocal calls
        async with gate:
            result = await run_debate(
                f"Should team {i} adopt the plan?",
                config=config,
                model=model,
                seed=i,
                run=Run(pool=pool),
            )
            calls += result.usage.calls

    try:
        await asyncio.gather(*(one(i) for i in range(n)))
    finally:
        await pool.aclose()
    return calls


@contextmanager
def serving(latency: float) -> Iterator[str]:
    """The model server at ``latency`` in its own process; yields its base URL."""
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "benchmarks" / "model_server.py"), str(latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        yield server.stdout.readline().strip()
    finally:
        server.stdin.close()
        server.wait(10)


@dataclass(frozen=True)
class CliRun:
    """One ``debate run`` process, timed from outside and by its own jsonl events."""

    wall: float
    """Spawn to exit."""
    start: float
    """Spawn to the plan event: interpreter, imports, flags, config, cache and store."""
    setup: float
    """Plan to the first call: the model client (importing the openai SDK), the panel."""
    calls: float
    """First call's start to last call's finish."""
    after: float
    """Last call's finish to exit: statistics, reports, result, store, shutdown."""
    cpu: float
    """The process's user + system CPU time."""


def cli_run(base_url: str, folder: Path, warm: Path | None = None) -> CliRun:
    """``debate run`` against ``base_url``, output and store in ``folder`` (a fresh one).

    ``warm``: with ``DEBATE_WARM=1``, its warm process's socket in that folder. The command
    then runs in a fork of the warm process, not a child of this one, so the CPU time is
    the client's alone.
    """
    argv = [sys.executable, "-m", "debate", "run", "Should team 1 adopt the plan?"]
    argv += ["--base-url", base_url, "--model", "bench", "--api-key-env", "", "--seed", "1"]
    argv += ["--out", str(folder / "out"), "--store", str(folder / "store.sqlite")]
    argv += ["--progress", "jsonl"]
    env = command_env(warm)
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    spawned = time.time()
    child = subprocess.run(argv, capture_output=True, text=True, cwd=folder, env=env)
    ended = time.time()
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if child.returncode != 0:
        raise SystemExit(f"debate run failed: {child.stderr.strip()}")
    events = [json.loads(line) for line in child.stderr.splitlines() if line.startswith("{")]
    plan = next(e["ts"] for e in events if e["type"] == "plan")
    first = min(e["ts"] for e in events if e["type"] == "start")
    last = max(e["ts"] for e in events if e["type"] == "finish")
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    return CliRun(ended - spawned, plan - spawned, first - plan, last - first, ended - last, cpu)


def cli_runs(latency: float, runs: int, warm: bool = False) -> tuple[CliRun, float | None]:
    """The median of each figure over ``runs`` runs of ``debate run`` at ``latency``.

    ``warm``: with ``DEBATE_WARM=1``; the first command runs in its own process and starts
    the warm process in the background, and is timed apart (the second value); ``debate
    warm start`` then waits until the warm process serves, the median is of the ``runs``
    after it, and the warm process is stopped at the end.
    """
    with serving(latency) as base_url, tempfile.TemporaryDirectory() as scratch:
        sockets = Path(scratch) / "warm" if warm else None
        first = None
        if sockets is not None:
            sockets.mkdir(mode=0o700)
            (Path(scratch) / "first").mkdir()
            first = cli_run(base_url, Path(scratch) / "first", sockets).wall
            warm_start(sockets)
        timed = []
        try:
            for i in range(runs):
                folder = Path(scratch) / str(i)
                folder.mkdir()
                timed.append(astuple(cli_run(base_url, folder, sockets)))
        finally:
            for path in sockets.rglob("*.sock") if sockets is not None else ():
                stop(path)
    return CliRun(*(statistics.median(column) for column in zip(*timed, strict=True))), first


def command_env(warm: Path | None) -> dict[str, str]:
    """A ``debate`` command's environment; ``warm``: with ``DEBATE_WARM=1``, sockets there."""
    env = child_env(PYTHONPATH=str(ROOT))
    if warm is not None:
        env.update(DEBATE_WARM="1", XDG_RUNTIME_DIR=str(warm))
    return env


def warm_start(sockets: Path) -> None:
    """``debate warm start`` with the commands' environment: returns once it serves."""
    command = [sys.executable, "-m", "debate", "warm", "start"]
    subprocess.run(command, check=True, capture_output=True, env=command_env(sockets))


CLI_BOUND = 1.6
"""``debate run`` at L: its wall time over the critical path 4L, at most."""


def started(code: str, runs: int) -> float:
    """The median wall time of ``python -c code`` with the package importable, as installed."""
    walls = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", code], check=True, env=child_env(PYTHONPATH=str(ROOT))
        )
        walls.append(time.perf_counter() - start)
    return statistics.median(walls)


IMPORTS: tuple[tuple[str, str], ...] = (
    ("the records (pydantic models)", "debate.records"),
    ("the run command's modules", "debate._cli.run"),
    ("those and aiohttp (the first call's client)", "debate._cli.run, aiohttp"),
)
"""What a run must import before its first request leaves, each measured alone (with the
cyclic collector held, as the command holds it): the floor under its start, whatever the
command does with its time."""


def import_floor(runs: int, allowance: float) -> str:
    """Each of :data:`IMPORTS` in its own process, against the time the bound leaves."""
    found = [
        (what, started(f"import gc; gc.disable(); import {names}", runs)) for what, names in IMPORTS
    ]
    return "; ".join(
        f"{what} {seconds:.3f} s = {seconds / allowance:.2f} x" for what, seconds in found
    )


def split(run: CliRun, path: float) -> str:
    return (
        f"start {run.start:.3f} s, set-up {run.setup:.3f} s, calls {run.calls:.3f} s "
        f"({run.calls / path:.3f} x 4L), after the last call {run.after:.3f} s"
    )


def cli_figures(latency: float, runs: int) -> None:
    """``debate run`` end to end at ``latency`` and at zero latency, with the split.

    On a shared machine the wall time also holds the time the process waited for a core;
    its CPU time does not, so CPU + 4L is printed too: the wall time idle cores would allow.
    """
    bare = started("pass", runs)
    served, _ = cli_runs(latency, runs)
    free, _ = cli_runs(0.0, runs)
    path = 4 * latency
    allowance = (CLI_BOUND - 1) * path
    print(f"debate run, the command in its own process (median of {runs} runs each):")
    print(
        f"  @ L = {latency * 1000:.0f} ms: {served.wall:6.3f} s = {served.wall / path:.3f} x the "
        f"critical path 4L = {path:.1f} s (target <= {CLI_BOUND}); load {os.getloadavg()[0]:.2f}"
    )
    print(f"      {split(served, path)}")
    idle = served.cpu + path
    print(
        f"      CPU {served.cpu:.3f} s: on idle cores the run cannot beat CPU + 4L = "
        f"{idle:.3f} s = {idle / path:.3f} x"
    )
    print(
        f"  @ L = 0 ms: {free.wall:6.3f} s, the framework's own time = {free.wall / path:.3f} x "
        f"4L (the {CLI_BOUND} x bound leaves it {CLI_BOUND - 1:.1f} x); CPU {free.cpu:.3f} s = "
        f"{free.cpu / path:.3f} x 4L"
    )
    print(f"      {split(free, path)}; a bare interpreter starts in {bare:.3f} s")
    print(
        f"  imports alone, each in its own process, against the {allowance:.2f} s the bound "
        f"leaves: {import_floor(runs, allowance)}"
    )
    warm_figures(latency, runs)


def warm_figures(latency: float, runs: int) -> None:
    """``debate run`` with ``DEBATE_WARM=1``: each command a fork of a warm process."""
    path = 4 * latency
    served, first = cli_runs(latency, runs, warm=True)
    free, _ = cli_runs(0.0, runs, warm=True)
    print(
        f"debate run with DEBATE_WARM=1, a fork of the warm process (median of {runs} runs each):"
    )
    print(
        f"  @ L = {latency * 1000:.0f} ms: {served.wall:6.3f} s = {served.wall / path:.3f} x the "
        f"critical path 4L (target <= {CLI_BOUND}); the first command (its own process, "
        f"starting the warm one) {first or 0:.3f} s = {(first or 0) / path:.3f} x"
    )
    print(f"      {split(served, path)}")
    print(f"  @ L = 0 ms: {free.wall:6.3f} s = {free.wall / path:.3f} x 4L; {split(free, path)}")


def served(base_url: str) -> dict[str, Any]:
    """The model server's count of calls served, and the last request body it answered."""
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/served") as response:
        value: dict[str, Any] = json.loads(response.read())
    return value


CPU_BOUND_MS = 0.75
"""What 256 calls in flight need on 2 cores with the model server on one of them."""


def many(base_url: str, n: int, concurrency: int, latency: float) -> None:
    """``n`` debates at ``concurrency`` vs the ideal and vs a bare client; CPU per call."""
    cpu0, start = time.process_time(), time.perf_counter()
    calls = asyncio.run(debates(n, concurrency, base_url))
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu0
    body = served(base_url)["last"]  # a judge's request: the largest of a debate
    bare = asyncio.run(bare_client_rate(base_url, body, concurrency, seconds=max(3.0, wall / 2)))
    ideal = concurrency / latency
    rate = calls / wall
    per_call_ms = cpu / calls * 1000
    print(
        f"{n} debates @ {concurrency}: {calls} calls in {wall:.2f} s = {rate:.1f} calls/s = "
        f"{rate / ideal:.3f} x the ideal {ideal:.0f} calls/s (target >= 0.80); "
        f"a bare aiohttp client reaches {bare.rate:.1f} calls/s ({bare.rate / ideal:.3f} x the "
        f"ideal), the framework {rate / bare.rate:.3f} x that (target >= 0.85); "
        f"load {os.getloadavg()[0]:.2f}"
    )
    print(
        f"  framework CPU per call: {per_call_ms:.3f} ms = {per_call_ms / CPU_BOUND_MS:.3f} x the "
        f"{CPU_BOUND_MS} ms bound (client process CPU {cpu:.2f} s over {calls} calls, "
        f"{cpu / wall:.2f} of a core); the bare client's HTTP alone {bare.cpu_ms:.3f} ms a call "
        f"= {bare.cpu_ms / CPU_BOUND_MS:.3f} x the bound"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--debates", type=int, default=200, help="at the first concurrency")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[64, 256])
    parser.add_argument(
        "--cli-runs", type=int, default=5, help="runs of `debate run` per figure (0: none)"
    )
    parser.add_argument("--cli-only", action="store_true", help="only the `debate run` figures")
    args = parser.parse_args()
    latency = args.latency
    if args.cli_only:
        cli_figures(latency, args.cli_runs)
        return
    with serving(latency) as base_url:
        asyncio.run(debates(1, 1, base_url))  # warm up imports and connections
        start = time.perf_counter()
        asyncio.run(debates(1, 1, base_url))
        one_wall = time.perf_counter() - start
        start = time.perf_counter()
        asyncio.run(debates(1, 1, base_url, sequential=True))
        sequential_wall = time.perf_counter() - start
        print(f"server latency L = {latency * 1000:.0f} ms")
        print(
            f"one debate:        {one_wall:6.3f} s  = {one_wall / (4 * latency):.3f} x the "
            f"critical path 4L ({4 * latency:.1f} s; target <= 1.25)"
        )
        print(
            f"sequential order:  {sequential_wall:6.3f} s  -> concurrent run is "
            f"{one_wall / sequential_wall:.3f} x the reference article's order"
        )
        first = args.concurrency[0]
        for concurrency in args.concurrency:
            # The same number of rounds of debates at each concurrency.
            many(base_url, max(1, args.debates * concurrency // first), concurrency, latency)
    if args.cli_runs:
        cli_figures(latency, args.cli_runs)


if __name__ == "__main__":
    main()
