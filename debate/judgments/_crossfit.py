"""Cross-fitting: the panel against people, where nothing learns on the item it is tested on.

Items (never single units: every pair of options of an item goes together) are dealt into
``folds`` folds by a seeded permutation. For each fold, the judge weights that learn from
people (``labels``: each judge's chance-corrected agreement with the people's call) and
the weights that learn from agreement alone (``latent``: the one-coin model over A/B calls
on verdicts, a one-factor model on scores) are fitted on the other folds only, and the
fold's items are decided with them. ``equal`` weights and the ungated ``majority`` learn
nothing and are decided once. The result is a
:class:`~debate.records._judgments.DecisionFrame`, which :mod:`debate.judgments._metrics`
turns into the report.

Thresholds are not tuned: they come from the configuration, so nothing else learns.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from debate.exceptions import ConfigurationError
from debate.judgments._earned import latent_weights, observed
from debate.judgments._learn import calibrate_fold, label_weights, predict_agree
from debate.judgments._recorded import decide_scores
from debate.judgments._score_cells import option_points
from debate.judgments._verdicts import decide_verdicts, verdict_matrix
from debate.panel import margin_evidence, verdict_evidence, weight_vector
from debate.records import (
    NO_CALL,
    OUTCOMES,
    Calls,
    DecisionFrame,
    ItemDecision,
    OptionScores,
    ScoreTable,
    Table,
    Thresholds,
    VerdictTable,
)
from debate.stats import krippendorff_alpha

log = logging.getLogger(__name__)

PEOPLE_AGREE = 0.75
"""People agree on a unit when their majority holds at least this share of them: with
three people, 3 of 3 (2 of 3 is a split); with five, 4 of 5."""
Key = tuple[str, str, str]
"""A decision unit: item, first option, second option."""


@dataclass(frozen=True)
class People:
    """People's call and split per decision unit, keyed like the decisions."""

    label: dict[Key, int]
    split: dict[Key, bool]


def fold_of_items(n_items: int, folds: int, seed: int) -> NDArray[np.int32]:
    """Deal items into folds: a seeded permutation, then round robin (sizes differ by <= 1)."""
    if folds < 2:
        raise ConfigurationError(f"--folds must be at least 2; got {folds}", field="--folds")
    if n_items < folds:
        raise ConfigurationError(
            f"--folds {folds} needs at least {folds} items; the table has {n_items}",
            field="--folds",
        )
    order = np.random.default_rng(seed).permutation(n_items)
    fold = np.empty(n_items, dtype=np.int32)
    fold[order] = np.arange(n_items) % folds
    return fold


@dataclass(frozen=True)
class Rules:
    """What every decision of one run shares: thresholds, the dimension, the seed."""

    thresholds: Thresholds
    dimension: str | None = None
    seed: int = 0


def decide(
    table: Table,
    rules: Rules,
    *,
    weights: Mapping[str, float] | None = None,
    items: Sequence[int] | None = None,
) -> list[ItemDecision]:
    """One entry to both engines, so cross-fitting reads one kind of decision."""
    if isinstance(table, VerdictTable):
        return decide_verdicts(
            table,
            thresholds=rules.thresholds,
            judge_weights=weights,
            seed=rules.seed,
            items=items,
        )
    return decide_scores(
        table,
        thresholds=rules.thresholds,
        judge_weights=weights,
        dimension=rules.dimension,
        seed=rules.seed,
        items=items,
    )


def key_of(decision: ItemDecision) -> Key:
    return (decision.item, decision.options[0], decision.options[1])


def _majority(votes: Sequence[int]) -> tuple[int, bool]:
    """Strict-majority call (or NO_CALL) and whether people split on it."""
    counts = np.bincount(np.asarray(votes, dtype=np.int64), minlength=3)
    top = int(counts.argmax())
    share = counts[top] / counts.sum()
    if share <= 0.5:
        return NO_CALL, True
    return top, bool(share < PEOPLE_AGREE)


def people_from_verdicts(labels: VerdictTable, keys: Sequence[Key]) -> People:
    """People's majority verdict per unit; A is the unit's first option."""
    by_item: dict[str, list[int]] = {}
    for i, v in zip(labels.item.tolist(), labels.verdict.tolist(), strict=True):
        by_item.setdefault(labels.items[i], []).append(int(v))
    label: dict[Key, int] = {}
    split: dict[Key, bool] = {}
    for key in keys:
        votes = by_item.get(key[0])
        if votes:
            label[key], split[key] = _majority(votes)
    return People(label, split)


def people_from_scores(
    labels: ScoreTable, keys: Sequence[Key], dimension: str | None
) -> tuple[People, dict[tuple[str, str], float]]:
    """Each person's preference per pair of options, their majority, and their mean scores.

    A person who scored both options prefers the higher (tie when equal); the unit's label
    is the people's strict majority over those preferences.
    """
    group, option, scores = option_points(labels, dimension=dimension)
    at = {
        (labels.items[g], labels.options[o]): row
        for row, (g, o) in enumerate(zip(group.tolist(), option.tolist(), strict=True))
    }
    means: dict[tuple[str, str], float] = {}
    label: dict[Key, int] = {}
    split: dict[Key, bool] = {}
    for key in keys:
        first, second = at.get((key[0], key[1])), at.get((key[0], key[2]))
        if first is None or second is None:
            continue
        diff = scores[first] - scores[second]
        diff = diff[np.isfinite(diff)]
        if diff.size == 0:
            continue
        prefs = np.where(diff > 0, 0, np.where(diff < 0, 1, 2))
        label[key], split[key] = _majority(prefs.tolist())
    for (item, opt), row in at.items():
        finite = scores[row][np.isfinite(scores[row])]
        if finite.size:
            means[(item, opt)] = float(finite.mean())
    return People(label, split), means


def people_for(
    labels: Table, judgments: Table, keys: Sequence[Key], dimension: str | None
) -> tuple[People, dict[tuple[str, str], float]]:
    """People's calls on the judgments' units, from a verdict or a score table."""
    if isinstance(labels, VerdictTable):
        if isinstance(judgments, ScoreTable):
            _two_options(judgments)
        return people_from_verdicts(labels, keys), {}
    if isinstance(judgments, VerdictTable):
        raise ConfigurationError(
            f"{labels.source}: people gave scores but the judges gave verdicts; give people's "
            "verdicts (item, judge, verdict) as --labels",
            field="--labels",
        )
    return people_from_scores(labels, keys, dimension)


def _two_options(table: ScoreTable) -> None:
    counts = np.bincount(
        np.unique(np.stack([table.item, table.option]), axis=1)[0], minlength=len(table.items)
    )
    wrong = np.flatnonzero(counts != 2)
    if wrong.size:
        item = table.items[int(wrong[0])]
        raise ConfigurationError(
            f"{table.source}: item {item!r} has {int(counts[wrong[0]])} options; verdict labels "
            "(A/B) need exactly two options per item (A is the first listed)",
            field="--labels",
        )


def call_of(margin: float | None) -> int:
    """A margin's call: 0 the first option, 1 the second, 2 tie, NO_CALL for none."""
    if margin is None:
        return NO_CALL
    return 0 if margin > 0 else 1 if margin < 0 else 2


def cohen_kappa(calls: NDArray[np.int8], truth: NDArray[np.int8]) -> float:
    """Cohen's kappa of ``calls`` against ``truth`` over units where both exist (NaN if none)."""
    ok = (calls != NO_CALL) & (truth != NO_CALL)
    if not ok.any():
        return float("nan")
    c, t = calls[ok].astype(np.int64), truth[ok].astype(np.int64)
    observed = float((c == t).mean())
    expected = float((np.bincount(c, minlength=3) * np.bincount(t, minlength=3)).sum()) / (
        c.size * c.size
    )
    return (observed - expected) / (1 - expected) if expected < 1 else float("nan")


@dataclass(frozen=True)
class Fitted:
    """The decisions of one weighting, fold by fold, and the weights each fold used."""

    decisions: dict[Key, ItemDecision]
    weights: list[dict[str, float]]
    p_agree: NDArray[np.float64] | None = None
    """Per unit, ``p_agree`` calibrated on the other folds (NaN where the unit has no lead)."""


def cross_fit(
    judgments: Table,
    labels: Table,
    *,
    folds: int = 5,
    seed: int = 0,
    thresholds: Thresholds | None = None,
    dimension: str | None = None,
) -> DecisionFrame:
    """Decide every item with each weighting, learning only on the other folds.

    Every gated weighting also learns, on the other folds, how far its evidence can be
    trusted: a Platt calibration of ``|L|`` against whether people agreed with the lead, so
    each unit's ``p_agree`` is an out-of-fold probability.
    """
    thresholds = thresholds or Thresholds()
    fold_item = fold_of_items(len(judgments.items), folds, seed)
    rules = Rules(thresholds, dimension, seed)
    equal = {key_of(d): d for d in decide(judgments, rules)}
    keys = list(equal)
    if not keys:
        raise ConfigurationError(f"{judgments.source}: no item has two options to decide")
    people, means = people_for(labels, judgments, keys, dimension)
    item_index = {name: i for i, name in enumerate(judgments.items)}
    group = np.array([item_index[k[0]] for k in keys], dtype=np.int32)
    label = _labels(people, keys, judgments, labels)
    evidence = unit_evidence(judgments, [equal[k] for k in keys], group)
    split = Split(keys, group, fold_item[group], folds, label, evidence)
    latent_notes: dict[str, list[int]] = {}
    fitted = {
        "equal": _fit(judgments, split, rules, lambda _u, _i: None, equal=equal),
        "labels": _fit(judgments, split, rules, _by_labels(evidence, judgments.judges, label)),
        "latent": _fit(judgments, split, rules, _by_latent(judgments, dimension, latent_notes)),
    }
    return DecisionFrame(
        items=judgments.items,
        group=group,
        fold=split.fold,
        label=label,
        people_split=np.array([people.split.get(k, False) for k in keys], dtype=np.bool_),
        methods={
            "majority": _ungated([equal[k] for k in keys]),
            **{n: _gated([f.decisions[k] for k in keys], f.p_agree) for n, f in fitted.items()},
        },
        judges=_judge_calls(judgments.judges, [equal[k] for k in keys]),
        dimension=dimension,
        option_scores=_option_scores(judgments, fitted, fold_item, means, dimension),
        weights_by_fold={n: f.weights for n, f in fitted.items() if n != "equal"},
        options=tuple((k[1], k[2]) for k in keys),
        evidence=evidence,
        notes=[
            f"latent weights, fold{'s' if len(k) > 1 else ''} {', '.join(map(str, k))}: {note}"
            for note, k in latent_notes.items()
        ],
    )


def _labels(
    people: People, keys: Sequence[Key], judgments: Table, labels: Table
) -> NDArray[np.int8]:
    """People's call on each unit; an error when they make none (the names do not match)."""
    label = np.array([people.label.get(k, NO_CALL) for k in keys], dtype=np.int8)
    if not (label != NO_CALL).any():
        raise ConfigurationError(
            f"{labels.source}: people give no majority call on any unit of "
            f"{judgments.source}; check that the item and option names match",
            field="--labels",
        )
    return label


def _judge_calls(judges: Sequence[str], decisions: Sequence[ItemDecision]) -> dict[str, Calls]:
    """Each single judge as a method: its own call per unit, as confident as its margin."""
    out = {}
    for j in judges:
        margins = [d.judge_margins.get(j) for d in decisions]
        calls = np.array([call_of(m) for m in margins], dtype=np.int8)
        out[j] = Calls(
            call=calls,
            declared=(calls == 0) | (calls == 1),
            confidence=np.array([abs(m or 0.0) for m in margins], dtype=np.float64),
        )
    return out


def unit_evidence(
    judgments: Table, decisions: Sequence[ItemDecision], group: NDArray[np.int32]
) -> NDArray[np.float64]:
    """``units x judges``: each judge's evidence on each unit (see :mod:`debate.panel._evidence`).

    Verdicts: the mean of the judge's readings (probabilities where given); scores: the
    judge's own margin in points, a whole vote from :data:`FULL_VOTE_POINTS`.
    """
    if isinstance(judgments, VerdictTable):
        return verdict_evidence(judgments)[group]
    return np.stack(
        [margin_evidence([d.judge_margins.get(j) for j in judgments.judges]) for d in decisions]
    ).reshape(len(decisions), len(judgments.judges))


@dataclass(frozen=True)
class Split:
    """The units of a cross-fitted run, their folds, people's calls and the evidence."""

    keys: Sequence[Key]
    group: NDArray[np.int32]
    fold: NDArray[np.int32]
    folds: int
    label: NDArray[np.int8]
    evidence: NDArray[np.float64]


_WeighFn = Callable[[NDArray[np.bool_], NDArray[np.intp]], "dict[str, float] | None"]


def _by_labels(
    evidence: NDArray[np.float64], judges: Sequence[str], label: NDArray[np.int8]
) -> _WeighFn:
    def weigh(
        train_units: NDArray[np.bool_], _train_items: NDArray[np.intp]
    ) -> dict[str, float] | None:
        return label_weights(evidence, judges, label, train_units)

    return weigh


def _by_latent(judgments: Table, dimension: str | None, notes: dict[str, list[int]]) -> _WeighFn:
    """Latent weights per fold, fitted on the other folds' items.

    What a fold's fit warns of, or why it failed, goes in ``notes``: each text with the
    folds (1-based) that said it, so that five folds saying the same make one note.
    """
    seen = observed(judgments, dimension)  # once; each fold picks its training rows
    fold = 0

    def weigh(
        _train_units: NDArray[np.bool_], train_items: NDArray[np.intp]
    ) -> dict[str, float] | None:
        nonlocal fold
        fold += 1  # _fit weighs the folds in order
        fit = latent_weights(judgments, items=train_items.tolist(), seen=seen)
        said = [*fit.notes, *([fit.note + ": equal weights instead"] if fit.note else [])]
        for note in said:
            notes.setdefault(note, []).append(fold)
        return fit.weights

    return weigh


def _fit(
    judgments: Table,
    split: Split,
    rules: Rules,
    weigh: _WeighFn,
    *,
    equal: Mapping[Key, ItemDecision] | None = None,
) -> Fitted:
    """Per fold: weights and calibration from the other folds, then the fold's decisions.

    ``equal``: the decisions with equal weights, when the weighting learns nothing (only
    the calibration is fitted per fold).
    """
    decisions: dict[Key, ItemDecision] = {}
    used: list[dict[str, float]] = []
    p_agree = np.full(len(split.keys), np.nan)
    for k in range(split.folds):
        train_units = split.fold != k
        train_items = np.unique(split.group[train_units]).astype(np.intp)
        test_items = np.unique(split.group[~train_units]).astype(np.intp)
        weights = weigh(train_units, train_items)
        if weights is None:
            if equal is None:
                log.info("fold %d: no judge earned a weight on the other folds; equal weights", k)
            weights = dict.fromkeys(judgments.judges, 1.0)
        used.append(weights)
        w = weight_vector(judgments.judges, weights)
        truth = np.where(train_units, split.label, NO_CALL).astype(np.int8)
        platt = calibrate_fold(split.evidence, w, truth)
        p_agree[~train_units] = predict_agree(platt, split.evidence[~train_units], w)[1]
        if equal is None:
            for d in decide(judgments, rules, weights=weights, items=test_items.tolist()):
                decisions[key_of(d)] = d
    if equal is not None:
        decisions = dict(equal)
    missing = [k for k in split.keys if k not in decisions]
    if missing:
        raise RuntimeError(f"cross-fitting lost {len(missing)} units, e.g. {missing[0]}")
    return Fitted(decisions, used, p_agree)


def _gated(decisions: Sequence[ItemDecision], p_agree: NDArray[np.float64] | None) -> Calls:
    """A gated panel commits only to a winner; every other outcome calls no winner (tie).

    Beside its calls, the panel's lead on every unit and the lead's out-of-fold
    ``p_agree`` rank every unit for the risk-coverage curve, to 100 % coverage.
    """
    call = np.array(
        [
            NO_CALL
            if d.outcome == "insufficient"
            else (0 if d.winner == d.options[0] else 1)
            if d.outcome == "winner"
            else 2
            for d in decisions
        ],
        dtype=np.int8,
    )
    lead = np.array(
        [NO_CALL if d.lead is None else (0 if d.lead == d.options[0] else 1) for d in decisions],
        dtype=np.int8,
    )
    p = np.array([d.p_agree or 0.0 for d in decisions]) if p_agree is None else p_agree
    return Calls(
        call=call,
        declared=np.array([d.outcome == "winner" for d in decisions], dtype=np.bool_),
        confidence=np.array([d.confidence for d in decisions], dtype=np.float64),
        outcome=np.array([OUTCOMES.index(d.outcome) for d in decisions], dtype=np.int8),
        lead=lead,
        p_agree=np.where((lead == NO_CALL) | np.isnan(p), 0.0, p),
        calibrated=p_agree is not None,
    )


def _ungated(decisions: Sequence[ItemDecision]) -> Calls:
    """The naive panel: the plurality verdict, or the sign of the plain mean's margin."""
    calls, confidence = [], []
    for d in decisions:
        if d.shares is not None:
            order = [d.shares.get(v, 0.0) for v in ("A", "B", "tie")]
            best = max(order)
            calls.append(order.index(best) if order.count(best) == 1 else 2)
            confidence.append(abs(d.margin or 0.0))
        else:
            margin = d.margin_points if d.margin_points is not None else d.margin
            calls.append(call_of(margin))
            confidence.append(abs(margin or 0.0))
    call = np.array(calls, dtype=np.int8)
    return Calls(
        call=call,
        declared=(call == 0) | (call == 1),
        confidence=np.array(confidence, dtype=np.float64),
    )


def _option_scores(
    judgments: Table,
    fitted: Mapping[str, Fitted],
    fold_item: NDArray[np.int32],
    means: Mapping[tuple[str, str], float],
    dimension: str | None,
) -> OptionScores | None:
    """Per (item, option): people's mean, each judge's score, and each panel's score."""
    if not isinstance(judgments, ScoreTable) or not means:
        return None
    group, option, scores = option_points(judgments, dimension=dimension)
    people = np.array(
        [
            means.get((judgments.items[g], judgments.options[o]), np.nan)
            for g, o in zip(group.tolist(), option.tolist(), strict=True)
        ],
        dtype=np.float64,
    )
    plain = np.nanmean(np.where(np.isfinite(scores), scores, np.nan), axis=1)
    methods = {"majority": plain, "equal": plain}
    for name, fit in fitted.items():
        w = np.array(
            [[fit.weights[f].get(j, 0.0) for j in judgments.judges] for f in fold_item[group]]
        )
        w = np.where(np.isfinite(scores), w, 0.0)
        total = w.sum(axis=1)
        methods[name] = np.where(
            total > 0, np.nansum(scores * w, axis=1) / np.where(total > 0, total, 1), np.nan
        )
    return OptionScores(
        group=group,
        people=people,
        methods=methods,
        judges={j: scores[:, c] for c, j in enumerate(judgments.judges)},
    )


def alphas(
    judgments: Table, labels: Table, dimension: str | None
) -> tuple[float | None, float | None, str]:
    """Krippendorff's alpha among the judges and among the people, on their own units."""
    level = "nominal" if isinstance(judgments, VerdictTable) else "interval"
    return table_alpha(judgments, dimension), table_alpha(labels, dimension), level


def table_alpha(table: Table, dimension: str | None = None) -> float | None:
    """Krippendorff's alpha among a table's judges over its items (None when undefined).

    Nominal on verdicts (each judge's call on each item, both orders combined as the panel
    combines them: two readings that disagree are a tie), interval on scores (each judge's
    points per item and option). Relabelling A and B (and AB and BA) leaves it unchanged;
    reading the AB rows alone did not (they are the BA rows of the relabelled table).
    """
    if isinstance(table, VerdictTable):
        calls = verdict_matrix(table).calls.T
        matrix = np.where(calls == NO_CALL, np.nan, calls.astype(np.float64))
    else:
        _, _, rows = option_points(table, dimension=dimension)
        matrix = rows.T
    value = krippendorff_alpha(matrix, "nominal" if isinstance(table, VerdictTable) else "interval")
    return float(value) if np.isfinite(value) else None
