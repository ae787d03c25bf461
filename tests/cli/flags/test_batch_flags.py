"""``debate batch``'s own flags."""

from __future__ import annotations

import json

import pytest

from tests.cli.flags.harness import (
    Harness,
)
from tests.support.openai_server import FakeOpenAIServer


def test_batch_file_items_each_get_a_result(h: Harness) -> None:
    run = h.run("batch")
    assert run.code == 0, run.err
    lines = [json.loads(x) for x in (run.folder / "results.jsonl").read_text().splitlines()]
    assert [x["id"] for x in lines] == ["i1", "i2"]
    assert (run.folder / "i1" / "result.json").is_file()


def test_batch_concurrency_bounds_items_in_flight(h: Harness) -> None:
    with FakeOpenAIServer(latency=0.5) as one:
        assert h.run("batch", "--concurrency", "1", server=one).code == 0
    with FakeOpenAIServer(latency=0.5) as two:
        assert h.run("batch", "--concurrency", "2", server=two).code == 0
    assert one.max_in_flight <= 4 < two.max_in_flight  # an item's four judges run at once


@pytest.fixture
def limiter_waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits of the batch's rate limiter, on a clock that the waits move on."""
    from debate._cli import costs as costs_cli
    from debate.runtime import RateLimiter

    waits: list[float] = []
    now = [0.0]

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    def limiter(rpm: int | None, tpm: int | None) -> RateLimiter:
        return RateLimiter(rpm, tpm, clock=lambda: now[0], sleep=sleep)

    monkeypatch.setattr(costs_cli, "RateLimiter", limiter)
    return waits


def test_batch_rpm_spaces_the_requests(h: Harness, limiter_waits: list[float]) -> None:
    free = h.run("batch", "--rpm", "1000")
    assert free.code == 0 and limiter_waits == []
    limited = h.run("batch", "--rpm", "4")
    assert limited.code == 0, limited.err
    assert len(limited.records) == 8 and len(limiter_waits) == 1  # 4 more after a minute
    assert limiter_waits[0] == pytest.approx(60.0)


def test_batch_tpm_spaces_the_tokens(h: Harness, limiter_waits: list[float]) -> None:
    free = h.run("batch", "--tpm", "10000000")
    assert free.code == 0 and limiter_waits == []
    limited = h.run("batch", "--tpm", "1000")
    assert limited.code == 0, limited.err
    assert limiter_waits and all(w > 0 for w in limiter_waits)


def test_batch_json_prints_the_summary(h: Harness) -> None:
    run = h.run("batch", "--json")
    assert run.code == 0, run.err
    summary = json.loads(run.out)
    assert (summary["ok"], summary["failed"]) == (2, 0)
    assert summary["results"] == str(run.folder / "results.jsonl")
    assert summary["items"] == 2 and [x["id"] for x in summary["lines"]] == ["i1", "i2"]
