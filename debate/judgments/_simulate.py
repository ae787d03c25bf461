"""Planted panels: simulated judges and people whose quality is known, for tests and benchmarks.

Whether the panel's weights and gates work can only be shown where the truth is known: a
planted panel says what each judge's accuracy (or noise) is, draws the judgments, and lets
a test check that the machinery recovers what was planted. Tables are built column by column
with numpy, so that a benchmark of 100,000 items spends its time in the code it measures.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from debate.records import Scale, ScoreTable, VerdictTable

CHANCE = 1 / 3
"""Accuracy of a judge that picks one of A, B, tie at random. A planted judge below it is
adversarial: rather than erring at random it reverses the verdict (A for B, B for A, a side
for a tie), so that it prefers the wrong answer as a confused judge would not."""
DEFAULT_PEOPLE_NOISE = 0.5
"""Default noise SD of a planted person's scores, in points of the table's scale."""


def _names(prefix: str, count: int) -> tuple[str, ...]:
    width = len(str(count))
    return tuple(f"{prefix}{i + 1:0{width}d}" for i in range(count))


def _check_rate(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} is {value}: give a probability between 0 and 1")


def planted_verdicts(
    n_items: int,
    accuracies: Mapping[str, float],
    *,
    people: int = 3,
    people_accuracy: float = 0.9,
    tie_rate: float = 0.1,
    seed: int = 0,
) -> tuple[VerdictTable, VerdictTable]:
    """Judges' and people's verdicts on ``n_items`` pairs whose true verdict is planted.

    Each item's truth is ``tie`` with probability ``tie_rate``, else A or B evenly. A judge
    with accuracy ``a`` gives the truth with probability ``a``; otherwise one of the two
    wrong verdicts at random, or, when ``a`` is below :data:`CHANCE`, the reversed one.

    Returns:
        ``(judges, people)``: one row per (item, judge), no order given.
    """
    if n_items < 1:
        raise ValueError(f"n_items is {n_items}: plant at least one item")
    _check_rate("tie_rate", tie_rate)
    for name, accuracy in {**accuracies, "people_accuracy": people_accuracy}.items():
        _check_rate(f"accuracy of {name}", accuracy)
    rng = np.random.default_rng(seed)
    truth = np.where(rng.random(n_items) < tie_rate, 2, rng.integers(0, 2, n_items))
    items = _names("item", n_items)
    judges = _verdict_table("planted judges", items, truth, dict(accuracies), rng)
    persons = dict.fromkeys(_names("person", people), people_accuracy)
    return judges, _verdict_table("planted people", items, truth, persons, rng)


def _verdict_table(
    source: str,
    items: tuple[str, ...],
    truth: NDArray[np.int64],
    accuracies: dict[str, float],
    rng: np.random.Generator,
) -> VerdictTable:
    columns = [_planted_calls(truth, a, rng) for a in accuracies.values()]
    verdicts = np.stack(columns, axis=1) if columns else np.empty((truth.size, 0), np.int64)
    return _calls_table(source, items, tuple(accuracies), verdicts)


def _calls_table(
    source: str,
    items: tuple[str, ...],
    judges: tuple[str, ...],
    calls: NDArray[np.int64],
    probability: NDArray[np.float64] | None = None,
) -> VerdictTable:
    """An ``items x judges`` matrix of verdict codes as a table's rows, item by item."""
    n, width = calls.shape
    return VerdictTable(
        source=source,
        items=items,
        judges=judges,
        item=np.repeat(np.arange(n, dtype=np.int32), width),
        judge=np.tile(np.arange(width, dtype=np.int32), n),
        verdict=calls.reshape(-1).astype(np.int8),
        order=np.zeros(n * width, dtype=np.int8),
        probability=probability,
    )


def _planted_calls(
    truth: NDArray[np.int64], accuracy: float, rng: np.random.Generator
) -> NDArray[np.int64]:
    n = truth.size
    right = rng.random(n) < accuracy
    if accuracy < CHANCE:
        side = rng.integers(0, 2, n)
        wrong = np.where(truth == 2, side, 1 - truth)
    else:
        wrong = (truth + rng.integers(1, 3, n)) % 3
    calls: NDArray[np.int64] = np.where(right, truth, wrong)
    return calls


def planted_scores(
    n_items: int,
    options: Sequence[str],
    noise: Mapping[str, float],
    *,
    people: int = 3,
    people_noise: float = DEFAULT_PEOPLE_NOISE,
    scale: Scale | None = None,
    seed: int = 0,
    adversarial: Collection[str] = (),
) -> tuple[ScoreTable, ScoreTable]:
    """Judges' and people's scores of every option of ``n_items`` items, on ``scale``.

    Each (item, option) has a latent quality, normal around the scale's middle with a
    quarter of its span as SD; a judge scores quality plus its own normal noise (SD
    ``noise[judge]`` in points of the scale), rounded to whole points when the scale's ends
    are whole, and clipped to the scale. An ``adversarial`` judge scores the quality
    mirrored about the middle (it prefers what is worse).

    Returns:
        ``(judges, people)``: one row per (item, option, judge), dimension ``overall``.
    """
    scale = scale or Scale(low=1, high=5)
    if n_items < 1 or len(options) < 2:
        raise ValueError("plant at least one item with at least two options")
    unknown = sorted(set(adversarial) - set(noise))
    if unknown:
        raise ValueError(f"adversarial names {unknown}, not judges in noise: {sorted(noise)}")
    rng = np.random.default_rng(seed)
    middle, span = (scale.low + scale.high) / 2, scale.high - scale.low
    quality = middle + span / 4 * rng.standard_normal((n_items, len(options)))
    items = _names("item", n_items)
    spec = {j: (sd, j in adversarial) for j, sd in noise.items()}
    judges = _score_table("planted judges", items, tuple(options), quality, spec, scale, rng)
    persons = dict.fromkeys(_names("person", people), (people_noise, False))
    crowd = _score_table("planted people", items, tuple(options), quality, persons, scale, rng)
    return judges, crowd


def _score_table(
    source: str,
    items: tuple[str, ...],
    options: tuple[str, ...],
    quality: NDArray[np.float64],
    judges: dict[str, tuple[float, bool]],
    scale: Scale,
    rng: np.random.Generator,
) -> ScoreTable:
    n_items, n_options = quality.shape
    n_judges = len(judges)
    middle = (scale.low + scale.high) / 2
    scores = np.empty((n_items, n_options, n_judges))
    for j, (sd, reverse) in enumerate(judges.values()):
        seen = 2 * middle - quality if reverse else quality
        scores[:, :, j] = seen + sd * rng.standard_normal(quality.shape)
    if float(scale.low).is_integer() and float(scale.high).is_integer():
        scores = np.round(scores)
    scores = np.clip(scores, scale.low, scale.high)
    grid = np.indices((n_items, n_options, n_judges), dtype=np.int32).reshape(3, -1)
    rows = grid.shape[1]
    return ScoreTable(
        source=source,
        scale=scale,
        items=items,
        options=options,
        judges=tuple(judges),
        dimensions=("overall",),
        units=options,
        item=grid[0],
        option=grid[1],
        unit=grid[1].copy(),
        judge=grid[2],
        dimension=np.zeros(rows, dtype=np.int32),
        score=scores.reshape(-1),
        order=np.zeros(rows, dtype=np.int8),
        standing=np.full(rows, -1, dtype=np.int8),
    )


def planted_pairs(
    n_items: int,
    accuracies: Mapping[str, float],
    *,
    fooled: Collection[str] = (),
    fooled_share: float = 0.0,
    tie_rate: float = 0.05,
    probabilities: bool = False,
    seed: int = 0,
) -> tuple[VerdictTable, VerdictTable, NDArray[np.bool_]]:
    """Pairs with a planted better answer, judges who may be fooled, one person's label each.

    Each item's truth is A or B evenly. A judge picks the better answer with its accuracy
    when it picks a side, and says tie with ``tie_rate``; a judge in ``fooled`` is wrong on
    every item of a planted subset (``fooled_share`` of the items, the adversarial kind: the
    better answer looks worse to it) and keeps its accuracy elsewhere. With
    ``probabilities`` every verdict comes with the judge's probability for A, further from
    0.5 when it is right, as a judge that reports its confidence does.

    Returns:
        ``(judges, people, subset)``: the subset marks the fooled items.
    """
    _check_rate("tie_rate", tie_rate)
    _check_rate("fooled_share", fooled_share)
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, n_items)
    subset = rng.random(n_items) < fooled_share
    calls, sure = _fooled_calls(truth, subset, accuracies, fooled, tie_rate, rng)
    p_a = np.where(calls == 0, sure, np.where(calls == 1, 1 - sure, 0.5)).reshape(-1)
    items = _names("item", n_items)
    judges = _calls_table(
        "planted judges", items, tuple(accuracies), calls, p_a if probabilities else None
    )
    people = _calls_table("planted people", items, ("person1",), truth[:, None])
    return judges, people, subset


def _fooled_calls(
    truth: NDArray[np.int64],
    subset: NDArray[np.bool_],
    accuracies: Mapping[str, float],
    fooled: Collection[str],
    tie_rate: float,
    rng: np.random.Generator,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """``items x judges`` calls and how sure each judge is of its call (surer when right)."""
    n_items = truth.size
    verdicts, strength = [], []
    for name, accuracy in accuracies.items():
        _check_rate(f"accuracy of {name}", accuracy)
        right = rng.random(n_items) < accuracy
        if name in fooled:
            right &= ~subset
        call = np.where(rng.random(n_items) < tie_rate, 2, np.where(right, truth, 1 - truth))
        verdicts.append(call)
        strength.append(
            np.where(right, rng.uniform(0.65, 0.95, n_items), rng.uniform(0.5, 0.8, n_items))
        )
    return np.stack(verdicts, axis=1), np.stack(strength, axis=1)
