"""A batch file, its command line and its output, for the tests of batches over Ray and shards.

The test server's replies are a function of the request alone, so the same item gets the same
result whichever process (or Ray worker) runs it.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

from debate.models.test import fill_schema
from tests.support.openai_server import FakeOpenAIServer, Reply


def same_reply(body: dict[str, Any]) -> Reply:
    """A reply fitting the schema, drawn from a seed that is the request's digest."""
    text = json.dumps(body["messages"], sort_keys=True)
    seed = int(hashlib.sha256(text.encode()).hexdigest()[:12], 16)
    schema = body["response_format"]["json_schema"]["schema"]
    return Reply(content=json.dumps(fill_schema(schema, random.Random(seed))))


def write_batch(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "batch.jsonl"
    rows = [{"id": f"d{i}", "topic": f"Should team {i} adopt the plan?"} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def argv(batch: Path, server: FakeOpenAIServer, out: Path, *extra: str) -> list[str]:
    return [
        "batch",
        str(batch),
        "--model",
        "m",
        "--base-url",
        server.base_url,
        "--api-key-env",
        "",
        "--out",
        str(out),
        "--quiet",
        "--no-store",
        "--seed",
        "3",
        *extra,
    ]


def results(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
