"""Decide from recorded judgments, and validate them against people: the Python entry points.

``decide_judgments`` runs the panel's decision engine on judgments made elsewhere (people,
or LLM judges run by another tool), with no model calls; ``validate_judgments`` measures
that engine against people with cross-fitting. Both read the tidy table of
``docs/judgments.md`` from a path or take a table already read.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from debate.exceptions import ConfigurationError
from debate.judgments._crossfit import Rules, alphas, cross_fit, decide, table_alpha
from debate.judgments._earned import describe, latent_weights
from debate.judgments._frame_table import frame_dataframe
from debate.judgments._metrics import validity_report
from debate.judgments._policy import (
    apply_policy,
    check_policy,
    choose_policy,
    judge_evidence,
    tier_weights,
)
from debate.judgments._score_cells import cells_read_once
from debate.judgments._tables import read_judgments
from debate.judgments._track import TrackRecords
from debate.panel import ba_as_read, band_advice
from debate.records import (
    OUTCOMES,
    CascadeCost,
    DecideSummary,
    DecisionFrame,
    Frozen,
    ItemDecision,
    Policy,
    Scale,
    ScoreTable,
    Table,
    Thresholds,
    ValidityReport,
    VerdictTable,
)

Weights = str | Mapping[str, float] | TrackRecords
"""``"equal"``, ``"latent"``, a mapping judge -> weight, or track records."""


class Decided(Frozen):
    """Every item's decision and the summary, as ``debate decide`` writes them."""

    summary: DecideSummary
    decisions: list[ItemDecision]


def load_table(source: str | Path | Table, scale: Scale | str | None = None) -> Table:
    """A table from a path (read and checked) or as given."""
    if isinstance(source, (str, Path)):
        return read_judgments(source, scale=scale)
    return source


def resolve_weights(
    table: Table, weights: Weights, dimension: str | None
) -> tuple[dict[str, float] | None, str, list[str]]:
    """The judge weights to decide with, where they come from, and notes on them."""
    if isinstance(weights, TrackRecords):
        earned = {j: weights.get(j).accuracy for j in table.judges}
        return earned, f"track-records:{weights.path}", []
    if weights == "equal":
        return None, "equal", []
    if weights == "latent":
        fit = latent_weights(table, dimension=dimension)
        return fit.weights, "latent", describe(fit)
    if isinstance(weights, str):
        raise ConfigurationError(
            f"weights: {weights!r} is not a weighting; use equal, latent, a mapping of judge "
            "to weight, or track records",
            field="--weights",
        )
    return _given(table, weights), "given", []


def _given(table: Table, weights: Mapping[str, float]) -> dict[str, float]:
    unknown = sorted(set(weights) - set(table.judges))
    missing = [j for j in table.judges if j not in weights]
    if unknown or missing:
        what = f"unknown judge {unknown[0]!r}" if unknown else f"no weight for judge {missing[0]!r}"
        raise ConfigurationError(
            f"weights: {what}; give one weight for each of {', '.join(table.judges)}",
            field="--weights",
        )
    for judge, w in weights.items():
        if not (isinstance(w, (int, float)) and math.isfinite(w) and w >= 0):
            raise ConfigurationError(
                f"weights[{judge!r}]: {w!r} is not a finite number >= 0", field="--weights"
            )
    if not any(w > 0 for w in weights.values()):
        raise ConfigurationError("weights: every weight is 0; give at least one judge a weight")
    return {j: float(weights[j]) for j in table.judges}


def decide_judgments(
    source: str | Path | Table,
    *,
    scale: Scale | str | None = None,
    weights: Weights = "equal",
    thresholds: Thresholds | None = None,
    dimension: str | None = None,
    seed: int = 0,
    policy: Policy | None = None,
) -> Decided:
    """Decide every item of a judgments table with the panel's rules; no model is called.

    With a ``policy`` (chosen by :func:`validate_judgments` with a target agreement), its
    weights replace ``weights``, each decision's ``p_agree`` is calibrated, and an item is
    declared only where ``p_agree`` reaches the policy's threshold (``winner``), else
    ``escalate``; with tiers, each tier is asked in turn.
    """
    table = load_table(source, scale)
    _check_dimension(table, dimension)
    thresholds = thresholds or Thresholds()
    _check_aggregate(table, thresholds)
    rules = Rules(thresholds, dimension, seed)
    cascade: list[int] = []
    with _bad_input(), cells_read_once():  # the cells read to decide serve the alpha too
        if policy is None:
            chosen, weights_source, notes = resolve_weights(table, weights, dimension)
            decisions = decide(table, rules, weights=chosen)
        else:
            check_policy(policy, table)
            by_tier = [decide(table, rules, weights=w) for w in tier_weights(policy, table.judges)]
            decisions, cascade = apply_policy(policy, by_tier, judge_evidence(table, by_tier[0]))
            chosen, weights_source = tier_weights(policy, table.judges)[-1], "policy"
            notes = [f"policy: {policy.guarantee}, provided that {policy.condition}"]
        alpha = table_alpha(table, dimension)
    outcomes = dict.fromkeys(OUTCOMES, 0)
    for d in decisions:
        outcomes[d.outcome] += 1
    split = [d.item for d in decisions if d.outcome == "irreconcilable"]
    notes += [band_advice(alpha, list(dict.fromkeys(split))), *table_warnings(table)]
    summary = DecideSummary(
        source=table.source,
        kind=table.kind,
        scale=str(table.scale) if isinstance(table, ScoreTable) else None,
        rows=table.rows,
        items=len(table.items),
        decisions=len(decisions),
        judges=list(table.judges),
        dimensions=list(table.dimensions) if isinstance(table, ScoreTable) else [],
        dimension=dimension,
        outcomes=outcomes,
        alpha=alpha,
        weights=chosen or dict.fromkeys(table.judges, 1.0),
        weights_source=weights_source,
        ignored_columns=list(table.ignored_columns),
        notes=notes,
        cascade=_cascade_cost(policy, table, decisions, cascade) if policy else None,
    )
    return Decided(summary=summary, decisions=decisions)


def _cascade_cost(
    policy: Policy, table: Table, decisions: Sequence[ItemDecision], declared_by: Sequence[int]
) -> CascadeCost:
    """How many judges' judgments the cascade read against asking every tier on every item."""
    asked = [0] * len(policy.tiers)
    for d in decisions:
        asked[(d.tier or 1) - 1] += 1
    # A unit stopped at tier k read the judges of tiers 1..k (tiers are cumulative).
    sizes = [len([j for j in t.judges if j in table.judges]) for t in policy.tiers]
    used = sum(n * size for n, size in zip(asked, sizes, strict=True))
    return CascadeCost(
        tiers=[t.tier for t in policy.tiers],
        declared=list(declared_by[1:]),
        escalated=declared_by[0],
        judgments_used=used,
        judgments_all_tiers=len(decisions) * sizes[-1],
    )


def table_warnings(table: Table) -> list[str]:
    """What the table itself suggests is wrong with it (BA rows written as read)."""
    warning = ba_as_read(table) if isinstance(table, VerdictTable) else None
    return [] if warning is None else [warning]


def _check_dimension(table: Table, dimension: str | None, flag: str = "--dimension") -> None:
    if dimension is None or (flag != "--dimension" and not isinstance(table, ScoreTable)):
        return
    if not isinstance(table, ScoreTable):
        raise ConfigurationError(
            "--dimension applies to score tables; verdict tables have no dimensions",
            field="--dimension",
        )
    if dimension not in table.dimensions:
        raise ConfigurationError(
            f"{flag}: dimension {dimension!r} is not in {table.source}; use one of "
            f"{', '.join(table.dimensions)}",
            field=flag,
        )


def _check_aggregate(table: Table, thresholds: Thresholds) -> None:
    """Refuse a median or trimmed mean on a verdict table rather than ignore it.

    A verdict table is decided by the weighted shares of its verdicts (a majority), which is
    not what a median or a trimmed mean of +1/0/-1 calls computes.
    """
    if isinstance(table, ScoreTable) or thresholds.aggregate in ("weighted_mean", "majority"):
        return
    raise ConfigurationError(
        f"--aggregate: {thresholds.aggregate} applies to score tables; a verdict table is "
        "decided by the weighted shares of its verdicts (weighted_mean or majority)",
        field="--aggregate",
    )


@contextmanager
def _bad_input() -> Iterator[None]:
    """The engines refuse bad input with a one-line ValueError; here it becomes bad input."""
    try:
        yield
    except ValueError as exc:
        raise ConfigurationError(" ".join(str(exc).split())) from exc


def select_judges(table: Table, names: Sequence[str], *, keep: bool) -> Table:
    """The rows of the judges in ``names`` (``keep``) or of every other judge."""
    unknown = sorted(set(names) - set(table.judges))
    if unknown:
        raise ConfigurationError(
            f"--people: {unknown[0]!r} is not a judge in {table.source}; its judges are "
            f"{', '.join(table.judges)}",
            field="--people",
        )
    chosen = [j for j in table.judges if (j in names) == keep]
    old = np.array([table.judges.index(j) for j in chosen], dtype=np.int32)
    new = np.full(len(table.judges), -1, dtype=np.int32)
    new[old] = np.arange(old.size, dtype=np.int32)
    rows = new[table.judge] >= 0
    columns = {
        name: getattr(table, name)[rows]
        for name in (
            "item",
            "option",
            "unit",
            "dimension",
            "score",
            "order",
            "standing",
            "verdict",
            "probability",
        )
        if hasattr(table, name) and isinstance(getattr(table, name), np.ndarray)
    }
    return replace(table, judges=tuple(chosen), judge=new[table.judge][rows], **columns)


@dataclass(frozen=True)
class Validity:
    """A validity report and the cross-fitted frame it was computed from."""

    report: ValidityReport
    frame: DecisionFrame
    policy: Policy | None = None
    """The policy chosen for a target agreement, when one was asked for."""

    def to_dataframe(self) -> Any:
        """Every per-unit, per-method and per-judge row as a pandas DataFrame.

        pandas is an optional extra (``pip install -e ".[pandas]"``); without it this raises
        a one-line error saying so.
        """
        return frame_dataframe(self.frame)


def validate_judgments(
    judgments: str | Path | Table,
    labels: str | Path | Table | None = None,
    *,
    people: Sequence[str] = (),
    scale: Scale | str | None = None,
    label_scale: Scale | str | None = None,
    folds: int = 5,
    seed: int = 0,
    n_boot: int = 1000,
    dimension: str | None = None,
    thresholds: Thresholds | None = None,
    target_agreement: float | None = None,
    risk: float = 0.10,
    tiers: Mapping[str, int] | None = None,
    refused_in_report: bool = False,
) -> Validity:
    """Cross-fit the panel on ``judgments`` against people's ``labels`` and report it.

    People's labels are a second table, or the rows of the judges named in ``people`` in
    the same table. ``label_scale`` is the labels' scale when their file does not declare
    it (default: ``scale``). With ``target_agreement``, a policy is chosen on the labels
    (:mod:`debate.judgments._policy`): agreement with people at least the target with
    probability at least ``1 - risk``; ``tiers`` (judge -> tier) makes it a cascade. A
    target the labels cannot support raises, or with ``refused_in_report`` leaves the
    report without a policy and says why (``policy_refusal``).

    Raises:
        ConfigurationError: bad input, or a target the labels cannot support (one line).
    """
    table = load_table(judgments, scale)
    _check_dimension(table, dimension)
    _check_aggregate(table, thresholds or Thresholds())
    table, truth = _split_people(table, labels, people, label_scale or scale)
    _check_dimension(truth, dimension, "--labels")
    with _bad_input():
        frame = cross_fit(
            table, truth, folds=folds, seed=seed, thresholds=thresholds, dimension=dimension
        )
        alpha_judges, alpha_people, level = alphas(table, truth, dimension)
    policy, refusal = _target_policy(
        table, frame, target_agreement, risk=risk, tiers=tiers, seed=seed, folds=folds,
        refused_in_report=refused_in_report,
    )  # fmt: skip
    report = validity_report(
        frame,
        alpha_judges=alpha_judges,
        alpha_people=alpha_people,
        alpha_level=level,
        n_boot=n_boot,
        seed=seed,
        source=table.source,
        folds=folds,
        policy=policy,
    )
    extra = [_band_advice(frame, table, alpha_judges), *frame.notes, *table_warnings(table)]
    update = {"notes": [*report.notes, *extra], "policy_refusal": refusal}
    return Validity(report=report.model_copy(update=update), frame=frame, policy=policy)


def _target_policy(
    table: Table,
    frame: DecisionFrame,
    target: float | None,
    *,
    risk: float,
    tiers: Mapping[str, int] | None,
    seed: int,
    folds: int,
    refused_in_report: bool,
) -> tuple[Policy | None, str | None]:
    """The policy for a target agreement, or (when asked to) why the labels refuse it."""
    if target is None:
        return None, None
    try:
        found = choose_policy(
            table, frame, target=target, risk=risk, tiers=tiers, seed=seed, folds=folds
        )
    except ConfigurationError as exc:
        if not refused_in_report or exc.field != "--target-agreement":
            raise
        return None, str(exc)
    return found, None


def _split_people(
    table: Table,
    labels: str | Path | Table | None,
    people: Sequence[str],
    scale: Scale | str | None,
) -> tuple[Table, Table]:
    """The judges' table and people's: a second table, or the named judges of the same one."""
    if labels is not None:
        return table, load_table(labels, scale)
    if not people:
        raise ConfigurationError(
            "give people's labels: --labels FILE, or --people NAME,... naming the "
            "people among the judges of the same file",
            field="--labels",
        )
    return select_judges(table, people, keep=False), select_judges(table, people, keep=True)


def _band_advice(frame: DecisionFrame, table: Table, alpha_judges: float | None) -> str:
    """What the judges' agreement band advises, naming the items the equal panel split on."""
    equal = frame.methods["equal"].outcome
    split = [] if equal is None else frame.group[equal == OUTCOMES.index("irreconcilable")]
    return band_advice(alpha_judges, list(dict.fromkeys(table.items[g] for g in split)))
