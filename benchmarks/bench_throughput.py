"""Throughput against an OpenAI-compatible test server with a fixed latency.

Run: ``python benchmarks/bench_throughput.py`` (about a minute).

The server runs in its own process on 127.0.0.1 and answers every request after L seconds,
concurrently. Reported, each as a ratio against its bound measured in the same run:

1. one default debate: wall time vs the critical path 4 x L (openings, cross-examination,
   closings, judges), and vs the reference article's order (every call one after another);
2. many debates at concurrency C: calls/s vs the server's ideal C / L;
3. the framework's own CPU time per model call (client process CPU time / calls).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


from debate import RunConfig, run_debate  # noqa: E402
from debate.api import ModelPool  # noqa: E402
from debate.models._base import Message, Model, ModelSettings, Reply, ReplySchema  # noqa: E402

SERVER = """
import sys, time
sys.path.insert(0, {root!r})
from tests.openai_server import FakeOpenAIServer
with FakeOpenAIServer(latency={latency}) as server:
    print(server.base_url, flush=True)
    sys.stdin.read()
"""


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
                f"Should team {i} adopt the plan?", config=config, model=model, seed=i, pool=pool
            )
            calls += result.usage.calls

    try:
        await asyncio.gather(*(one(i) for i in range(n)))
    finally:
        await pool.aclose()
    return calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--debates", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    latency = args.latency
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER.format(root=str(ROOT), latency=latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    base_url = server.stdout.readline().strip()
    try:
        asyncio.run(debates(1, 1, base_url))  # warm up imports and connections
        start = time.perf_counter()
        asyncio.run(debates(1, 1, base_url))
        one_wall = time.perf_counter() - start
        start = time.perf_counter()
        asyncio.run(debates(1, 1, base_url, sequential=True))
        sequential_wall = time.perf_counter() - start
        cpu0, start = time.process_time(), time.perf_counter()
        calls = asyncio.run(debates(args.debates, args.concurrency, base_url))
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu0
    finally:
        server.stdin.close()  # type: ignore[union-attr]
        server.wait(10)
    ideal = args.concurrency / latency
    rate = calls / wall
    per_call_ms = cpu / calls * 1000
    print(f"server latency L = {latency * 1000:.0f} ms")
    print(
        f"one debate:        {one_wall:6.3f} s  = {one_wall / (4 * latency):.3f} x the critical "
        f"path 4L ({4 * latency:.1f} s; target <= 1.25)"
    )
    print(
        f"sequential order:  {sequential_wall:6.3f} s  -> concurrent run is "
        f"{one_wall / sequential_wall:.3f} x the reference article's order"
    )
    print(
        f"{args.debates} debates @ {args.concurrency}: {calls} calls in {wall:.2f} s = "
        f"{rate:.1f} calls/s = {rate / ideal:.3f} x the ideal {ideal:.0f} calls/s "
        f"(target >= 0.80)"
    )
    print(
        f"framework CPU per call: {per_call_ms:.3f} ms = {per_call_ms / 2:.3f} x the 2 ms "
        f"bound (client process CPU {cpu:.2f} s over {calls} calls)"
    )


if __name__ == "__main__":
    main()
