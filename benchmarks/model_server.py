"""A fast OpenAI-compatible model server for throughput benchmarks, in its own process.

``tests/support/openai_server.py`` runs one thread per request (``time.sleep`` for the
latency): right for tests that script faults, but at concurrency 256 its threads and the
interpreter lock become the limit, and a benchmark would measure the test server instead
of the client. This one is aiohttp on one event loop: each request waits ``latency`` with
``asyncio.sleep`` and is answered with a valid reply of the requested schema. Replies are
drawn once per distinct schema (the reply text does not matter to throughput) so that the
server spends its CPU on HTTP, not on filling schemas.

Run ``python benchmarks/model_server.py LATENCY``: it prints its base URL and serves until its
standard input closes.

:func:`bare_client_rate` is the anchor of a benchmark's throughput: the calls per second that
a bare aiohttp client (no framework) reaches against the same server at the same concurrency,
on the same machine, in the same run.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import threading
import time
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aiohttp import ClientSession, ClientTimeout, TCPConnector, web  # noqa: E402

from debate.models.test import fill_schema  # noqa: E402
from tests.support.openai_server import request_schema  # noqa: E402


def _envelope(body: dict[str, Any], content: str) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "bench"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": sum(len(m["content"]) // 4 for m in body["messages"]),
                "completion_tokens": len(content) // 4,
                "total_tokens": 0,
            },
        }
    ).encode()


def make_app(latency: float, seed: int = 0) -> web.Application:
    """The server: every POST to ``/v1/chat/completions`` answered after ``latency`` s."""
    rng = random.Random(seed)
    replies: dict[str, str] = {}
    served = [0]
    last: list[Any] = [None]
    times: dict[str, float] = {}
    """Wall clock (time.time) of the first request's arrival and the last reply's sending."""

    async def complete(request: web.Request) -> web.Response:
        times.setdefault("first_request", time.time())
        body = await request.json()
        fmt = json.dumps(body["response_format"], sort_keys=True)
        content = replies.get(fmt)
        if content is None:
            content = replies[fmt] = json.dumps(fill_schema(request_schema(body), rng))
        await asyncio.sleep(latency)
        served[0] += 1
        last[0] = body
        times["last_reply"] = time.time()
        return web.Response(body=_envelope(body, content), content_type="application/json")

    async def count(request: web.Request) -> web.Response:
        answer = {"served": served[0], "last": last[0], **times}
        if "reset" in request.query:  # the next run's first request and last reply
            times.clear()
        return web.json_response(answer)

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/chat/completions", complete)
    app.router.add_get("/served", count)
    return app


async def _serve(latency: float) -> None:
    runner = web.AppRunner(make_app(latency), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=4096)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    print(f"http://127.0.0.1:{port}/v1", flush=True)
    closed = asyncio.Event()
    loop = asyncio.get_running_loop()
    threading.Thread(
        target=lambda: (sys.stdin.read(), loop.call_soon_threadsafe(closed.set)), daemon=True
    ).start()
    await closed.wait()
    await runner.cleanup()


class BareRate(NamedTuple):
    """What a bare aiohttp client reached: calls per second, and its CPU per call."""

    rate: float
    cpu_ms: float
    """This process's CPU time per call while the client ran, in milliseconds: what HTTP
    alone costs a client here, the floor under any framework's CPU per call."""


async def bare_client_rate(
    base_url: str, body: dict[str, Any], concurrency: int, seconds: float
) -> BareRate:
    """A bare aiohttp client: ``concurrency`` loops POSTing ``body`` for ``seconds``.

    No framework, no parsing beyond reading the reply: what the server and this machine allow
    at that concurrency, so that a benchmark can tell the client's share from the server's.
    """
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    url = base_url.rstrip("/") + "/chat/completions"
    done = 0
    connector = TCPConnector(limit=concurrency)
    async with ClientSession(connector=connector, timeout=ClientTimeout(total=60)) as client:
        end = time.perf_counter() + seconds

        async def loop() -> None:
            nonlocal done
            while time.perf_counter() < end:
                async with client.post(url, data=data, headers=headers) as response:
                    await response.read()
                done += 1

        start, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(loop() for _ in range(concurrency)))
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return BareRate(done / wall, cpu / max(done, 1) * 1000)


if __name__ == "__main__":
    asyncio.run(_serve(float(sys.argv[1]) if len(sys.argv) > 1 else 0.2))
