"""Conclusions ruled together in one turn of the loop are the ones each evaluation gets alone."""

from __future__ import annotations

import asyncio
import json
import random
import re
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel

from debate import FunctionModel, MultiJudgePanel, RunConfig
from debate.models import Message
from debate.panel import Context, ScoreBatch, Setting, _gather, conclude_batch
from debate.panel._gather import GATHERED_ITEMS, concluded
from debate.panel._margins import seed_runs
from debate.records import PanelResult, Thresholds
from tests.support.helpers import graded, role_of, schema_ids, transcript

TOPIC = re.compile(r"plan number (\d+)")


def judges(messages: list[Message], schema: type[BaseModel]) -> str:
    """Scores planted per debate (its topic says which): a lead for one side or none, and
    judges that agree closely or not at all; each debate is scored the same way every time."""
    found = TOPIC.search(" ".join(m.content for m in messages))
    debate = random.Random(found.group(1) if found else "?")
    lead, noise = debate.choice([-3, -1, 0, 1, 3]), debate.choice([0, 1, 4])
    role = role_of(messages)
    scores = {}
    for a in schema_ids(schema):
        own = random.Random(f"{found and found.group(1)}:{role}:{a}").randint(-noise, noise)
        side = lead if a.startswith("PRO") else -lead
        scores[a] = graded(min(10, max(1, 5 + side + own)))
    return json.dumps({"scores": scores, "key_finding": f"{role} read it"})


def debates(n: int, pro: int = 3, con: int = 3) -> list[Any]:
    return [transcript(pro, con, topic=f"Should we adopt plan number {i}?") for i in range(n)]


def panel(**config: Any) -> MultiJudgePanel:
    return MultiJudgePanel(models=FunctionModel(judges), config=RunConfig(model="f", **config))


def sizes_ruled(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of items of every batch the gatherer rules (a spy, the real function)."""
    seen: list[int] = []
    real = _gather.conclude_batch

    def spy(batch: ScoreBatch, *args: Any) -> Any:
        seen.append(batch.size)
        return real(batch, *args)

    monkeypatch.setattr(_gather, "conclude_batch", spy)
    return seen


def comparable(result: PanelResult) -> str:
    return result.model_dump_json(exclude={"usage"})


@pytest.mark.parametrize(
    "config",
    [
        {},
        {"swap": True},
        {"samples": 2},
        {"thresholds": Thresholds(aggregate="median")},
        {"thresholds": Thresholds(aggregate="trimmed_mean")},
        {"calibration": "minmax"},
    ],
    ids=["default", "swap", "samples", "median", "trimmed", "minmax"],
)
@pytest.mark.parametrize("seeding", ["one seed", "own seeds"])
def test_concurrent_evaluations_get_the_records_each_gets_alone(
    config: dict[str, Any], seeding: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With one seed, or each run its own (some shared, so a batch holds runs of several
    items and single ones, out of order), every record is the one it gets alone."""
    found = debates(GATHERED_ITEMS + 5)  # more than one batch's worth
    seeds = [7] * len(found) if seeding == "one seed" else [(i * 7) % 5 for i in range(len(found))]
    alone = [
        comparable(panel(**config).evaluate_sync(t, seed=s))
        for t, s in zip(found, seeds, strict=True)
    ]
    sizes = sizes_ruled(monkeypatch)

    async def together() -> list[PanelResult]:
        return await asyncio.gather(
            *(panel(**config).evaluate(t, seed=s) for t, s in zip(found, seeds, strict=True))
        )

    gathered = [comparable(r) for r in asyncio.run(together())]
    assert gathered == alone
    assert max(sizes) > 1, sizes  # conclusions were in fact ruled together
    assert max(sizes) <= GATHERED_ITEMS and sum(sizes) == len(found)
    outcomes = {json.loads(r)["decision"]["outcome"] for r in alone}
    assert len(outcomes) >= 2, outcomes  # the debates differ in what they decide


def test_only_items_of_one_shape_and_setting_are_ruled_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Shapes and settings keep items apart; a seed does not (each run of one draws its own)."""
    sizes = sizes_ruled(monkeypatch)
    shapes = [*debates(3), *debates(3, pro=2, con=4)]
    median = RunConfig(model="f", thresholds=Thresholds(aggregate="median"))

    async def together() -> list[PanelResult]:
        seeded = [panel().evaluate(t, seed=7) for t in shapes]
        other = MultiJudgePanel(models=FunctionModel(judges), config=median)
        return await asyncio.gather(
            *seeded, panel().evaluate(shapes[0], seed=8), other.evaluate(shapes[1], seed=7)
        )

    results = asyncio.run(together())
    assert sorted(sizes) == [1, 3, 4]  # 4 of one shape (seeds 7 and 8), 3 of the other, 1 median
    assert comparable(results[-2]) == comparable(panel().evaluate_sync(shapes[0], seed=8))
    alone = MultiJudgePanel(models=FunctionModel(judges), config=median)
    assert comparable(results[-1]) == comparable(alone.evaluate_sync(shapes[1], seed=7))


def _batch(seed: int) -> ScoreBatch:
    rng = np.random.default_rng(seed)
    raw = np.clip(np.round(5.5 + rng.normal(0, 2, (1, 4, 6))), 1, 10)
    return ScoreBatch(
        judges=["a", "b", "c", "d"],
        ids=[[f"u{i}" for i in range(6)]],
        is_pro=np.array([True, False] * 3),
        raw=raw,
        dimensions={"logic": raw.copy()},
        standings=rng.integers(0, 3, (1, 6, 4)),
    )


SETTING = Setting(thresholds=Thresholds(), calibration="zscore", seed=3, topic_type="t")
WEIGHTS = dict.fromkeys("abcd", 1.0)


def test_one_items_error_is_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """An item that makes the batch raise is ruled alone and raises; the others conclude."""
    real = _gather.conclude_batch
    bad = _batch(2)

    def refusing(batch: ScoreBatch, *args: Any) -> Any:
        if any(np.array_equal(row, bad.raw[0]) for row in batch.raw):
            raise ValueError("contexts: this item is refused")
        return real(batch, *args)

    monkeypatch.setattr(_gather, "conclude_batch", refusing)

    async def together() -> list[Any]:
        asked = [concluded(_batch(s), WEIGHTS, SETTING, Context(panel_size=4)) for s in range(4)]
        return await asyncio.gather(*asked, return_exceptions=True)

    found = asyncio.run(together())
    assert isinstance(found[2], ValueError) and "refused" in str(found[2])
    for s in (0, 1, 3):
        [alone] = real(_batch(s), WEIGHTS, SETTING, [Context(panel_size=4)])
        assert found[s] == alone


def test_a_cancelled_evaluation_is_skipped() -> None:
    """An evaluation cancelled while its conclusion waits leaves the others unharmed."""

    async def run() -> tuple[bool, Any]:
        first = asyncio.ensure_future(concluded(_batch(0), WEIGHTS, SETTING, Context(panel_size=4)))
        second = asyncio.ensure_future(
            concluded(_batch(1), WEIGHTS, SETTING, Context(panel_size=4))
        )
        await asyncio.sleep(0)  # both are waiting on the loop's next turn
        first.cancel()
        done = await second
        return first.cancelled(), done

    cancelled, done = asyncio.run(run())
    [alone] = conclude_batch(_batch(1), WEIGHTS, SETTING, [Context(panel_size=4)])
    assert cancelled and done == alone


def test_seed_runs_split_a_batch_where_its_seed_changes() -> None:
    stacked = _gather._stacked([_batch(s) for s in range(5)])
    runs = seed_runs(replace(stacked, seeds=(1, 1, 2, None, None)), SETTING)
    assert [(r.start, r.stop, s.seed) for r, s in runs] == [(0, 2, 1), (2, 3, 2), (3, 5, None)]
    assert all(replace(s, seed=SETTING.seed) == SETTING for _, s in runs)
    [(whole, own)] = seed_runs(replace(stacked, seeds=(4,) * 5), SETTING)
    assert (whole.start, whole.stop, own.seed) == (0, 5, 4)
    [(whole, own)] = seed_runs(stacked, SETTING)  # no seeds of its own: the setting's
    assert (whole.start, whole.stop) == (0, 5) and own is SETTING
