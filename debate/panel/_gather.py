"""Conclusions of concurrent evaluations, ruled together when they are ready at once.

A live panel concludes one item: its statistics are numpy calls on arrays of one row, so a
conclusion costs about 5 ms of the interpreter, almost all of it per call rather than per
item. When many debates run in one event loop (a batch, a service's runner, a script's
``gather``), their judges' replies arrive together and their conclusions queue behind one
another. Here each conclusion waits until the loop has run what is ready now, then every
conclusion asked meanwhile with the same shape, judge weights and setting (its seed aside)
is ruled in one :func:`~debate.panel._conclude.conclude_batch` (up to
:data:`GATHERED_ITEMS` at a time). On the 2-core test machine, 16 items that share a seed
cost about 2 ms each, 16 items with seeds of their own about 3 ms, one alone 5.5 ms.

The records are the ones each evaluation gets alone, bit for bit: every statistic of a
batch is its items' own. The bootstrap draws depend on the seed and the shape, so items are
stacked by seed: the margins' bootstrap takes each run of one seed as it would alone
(:func:`~debate.panel._margins.seed_runs`), the effective votes' interval draws each item's
columns from its own seed in one pass; everything else is computed for the whole batch at
once. Batches of up to ``EXACT_INTERVAL_ITEMS`` items take the paths a single item takes
(exact resampling, the effective votes' interval). An evaluation with nothing to share its
loop tick with waits one turn of the loop.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from debate.panel._conclude import Conclusion, conclude_batch
from debate.panel._decision import Context, ScoreBatch, Setting
from debate.stats import EXACT_INTERVAL_ITEMS

GATHERED_ITEMS = EXACT_INTERVAL_ITEMS
"""The most items ruled together: past it a batch takes paths a single item does not."""


@dataclass(frozen=True)
class _Asked:
    batch: ScoreBatch
    context: Context
    future: asyncio.Future[Conclusion]

    @property
    def seed(self) -> int | None:
        """The item's own seed, which its batch carries (:attr:`ScoreBatch.seeds`)."""
        return self.batch.seeds[0] if self.batch.seeds else None


class _Key(NamedTuple):
    """What conclusions ruled together share: shape, judge weights, setting (seed None).

    Each item's own seed is on its batch (:attr:`ScoreBatch.seeds`).
    """

    shape: Hashable
    weights: tuple[tuple[str, float], ...]
    setting: Setting


class _Gatherer:
    """One event loop's conclusions waiting for the end of the loop's current turn."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._waiting: dict[_Key, list[_Asked]] = {}

    def ask(
        self,
        batch: ScoreBatch,
        judge_weights: Mapping[str, float],
        setting: Setting,
        context: Context,
    ) -> asyncio.Future[Conclusion]:
        if not self._waiting:
            self._loop.call_soon(self._rule)
        asked = _Asked(replace(batch, seeds=(setting.seed,)), context, self._loop.create_future())
        key = _Key(_shape(batch), tuple(judge_weights.items()), replace(setting, seed=None))
        self._waiting.setdefault(key, []).append(asked)
        return asked.future

    def _rule(self) -> None:
        waiting, self._waiting = self._waiting, {}
        for key, asked in waiting.items():
            weights = dict(key.weights)
            for at in range(0, len(asked), GATHERED_ITEMS):
                _settle(asked[at : at + GATHERED_ITEMS], weights, key.setting)


def _shape(batch: ScoreBatch) -> Hashable:
    """What items must share to be ruled together: judges, sides, dimensions, what is given."""
    return (
        tuple(batch.judges),
        batch.is_pro.tobytes(),
        tuple(batch.dimensions),
        batch.standings is None,
        batch.spread is None,
    )


def _settle(asked: list[_Asked], weights: dict[str, float], setting: Setting) -> None:
    """Rule ``asked`` together; if that raises, each alone, so one item's error stays its own.

    Items of one seed are stacked next to one another: each draws as it would alone (the
    margins run by run, :func:`~debate.panel._margins.seed_runs`), everything else is the
    batch's at once.
    """
    live = sorted(
        (a for a in asked if not a.future.cancelled()),
        key=lambda a: (a.seed is None, a.seed or 0),
    )
    if not live:
        return
    try:
        found = conclude_batch(
            _stacked([a.batch for a in live]), weights, setting, [a.context for a in live]
        )
    except Exception:  # noqa: BLE001 - each item is ruled alone below, raising its own
        for a in live:
            _alone(a, weights, setting)
        return
    for a, conclusion in zip(live, found, strict=True):
        a.future.set_result(conclusion)


def _alone(asked: _Asked, weights: dict[str, float], setting: Setting) -> None:
    """One item ruled alone, its conclusion or its error set on its future."""
    try:
        [conclusion] = conclude_batch(asked.batch, weights, setting, [asked.context])
    except Exception as exc:  # noqa: BLE001 - the evaluation awaiting it raises it
        asked.future.set_exception(exc)
        return
    asked.future.set_result(conclusion)


def _stacked(batches: list[ScoreBatch]) -> ScoreBatch:
    """Batches of one shape as one: every per-item field concatenated, the rest shared."""
    if len(batches) == 1:
        return batches[0]
    first = batches[0]
    spread = None
    if first.spread is not None:
        spread = (
            np.concatenate([b.spread[0] for b in batches if b.spread is not None]),
            np.concatenate([b.spread[1] for b in batches if b.spread is not None]),
        )
    return ScoreBatch(
        judges=first.judges,
        ids=[ids for b in batches for ids in b.ids],
        is_pro=first.is_pro,
        raw=np.concatenate([b.raw for b in batches]),
        dimensions={
            d: np.concatenate([b.dimensions[d] for b in batches]) for d in first.dimensions
        },
        standings=None
        if first.standings is None
        else np.concatenate([b.standings for b in batches if b.standings is not None]),
        spread=spread,
        seeds=None if first.seeds is None else tuple(s for b in batches for s in b.seeds or ()),
    )


_GATHERERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Gatherer] = (
    weakref.WeakKeyDictionary()
)


async def concluded(
    batch: ScoreBatch, judge_weights: Mapping[str, float], setting: Setting, context: Context
) -> Conclusion:
    """One item's conclusion, ruled with any others asked in the same turn of the loop."""
    loop = asyncio.get_running_loop()
    gatherer = _GATHERERS.get(loop)
    if gatherer is None:
        gatherer = _GATHERERS[loop] = _Gatherer(loop)
    return await gatherer.ask(batch, judge_weights, setting, context)
