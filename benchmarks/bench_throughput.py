"""Throughput against an OpenAI-compatible model server with a fixed latency.

Run: ``python benchmarks/bench_throughput.py`` (about a minute).

The server (``benchmarks/model_server.py``, aiohttp on one event loop) runs in its own
process on 127.0.0.1 and answers every request after L seconds, concurrently. Reported, each
as a ratio against its bound measured in the same run:

1. one default debate: wall time vs the critical path 4 x L (openings, cross-examination,
   closings, judges), and vs the reference article's order (every call one after another);
2. many debates at concurrency C (64 and 256): calls/s vs the server's ideal C / L, and vs a
   bare aiohttp client (no framework) sending the same judge request at the same concurrency
   to the same server: what this machine and server allow, so the client's share shows;
3. the framework's own CPU time per model call (client process CPU time / calls).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


from model_server import bare_client_rate  # noqa: E402

from debate import RunConfig, run_debate  # noqa: E402
from debate.api import ModelPool  # noqa: E402
from debate.models._base import Message, Model, ModelSettings, Reply, ReplySchema  # noqa: E402


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


def served(base_url: str) -> dict[str, Any]:
    """The model server's count of calls served, and the last request body it answered."""
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/served") as response:
        value: dict[str, Any] = json.loads(response.read())
    return value


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
        f"a bare aiohttp client reaches {bare:.1f} calls/s ({bare / ideal:.3f} x the ideal), "
        f"the framework {rate / bare:.3f} x that"
    )
    print(
        f"  framework CPU per call: {per_call_ms:.3f} ms = {per_call_ms / 2:.3f} x the 2 ms "
        f"bound (client process CPU {cpu:.2f} s over {calls} calls, "
        f"{cpu / wall:.2f} of a core)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--debates", type=int, default=200, help="at the first concurrency")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[64, 256])
    args = parser.parse_args()
    latency = args.latency
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "benchmarks" / "model_server.py"), str(latency)],
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
    finally:
        server.stdin.close()  # type: ignore[union-attr]
        server.wait(10)


if __name__ == "__main__":
    main()
