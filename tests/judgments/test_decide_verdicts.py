"""The verdict engine: pairwise verdicts (A, B, tie) from recorded judgments to decisions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from debate.exceptions import ConfigurationError
from debate.judgments import planted_verdicts
from debate.judgments._verdicts import N_BOOT, decide_verdicts, verdict_matrix
from debate.records import ORDERS, VERDICTS, ItemDecision, Thresholds, VerdictTable, load_config

THRESHOLDS = Thresholds()
SPLIT_SHARE = THRESHOLDS.split_share


def _table(rows: Sequence[tuple[str, ...]]) -> VerdictTable:
    """Rows ``(item, judge, verdict[, order])`` as a columnar table."""
    items = tuple(dict.fromkeys(r[0] for r in rows))
    judges = tuple(dict.fromkeys(r[1] for r in rows))
    return VerdictTable(
        source="test",
        items=items,
        judges=judges,
        item=np.array([items.index(r[0]) for r in rows], dtype=np.int32),
        judge=np.array([judges.index(r[1]) for r in rows], dtype=np.int32),
        verdict=np.array([VERDICTS.index(r[2]) for r in rows], dtype=np.int8),
        order=np.array([ORDERS.index(r[3] if len(r) == 4 else "") for r in rows], dtype=np.int8),
    )


def _one(verdicts: Mapping[str, str], **kwargs: object) -> ItemDecision:
    table = _table([("q1", judge, verdict) for judge, verdict in verdicts.items()])
    (decision,) = decide_verdicts(table, thresholds=THRESHOLDS, **kwargs)  # type: ignore[arg-type]
    return decision


def test_unanimous_panel_names_the_winner() -> None:
    decision = _one({f"j{i}": "B" for i in range(5)})
    assert decision.outcome == "winner" and decision.winner == "B"
    assert decision.options == ("A", "B")
    assert decision.margin == -1.0 and decision.interval == (-1.0, -1.0)
    assert decision.confidence == 1.0
    assert decision.shares == {"A": 0.0, "B": 1.0, "tie": 0.0}
    assert decision.judge_margins == {f"j{i}": -1.0 for i in range(5)}
    assert "B is preferred" in decision.reasons[0]
    assert ItemDecision.model_validate_json(decision.model_dump_json()) == decision


def test_two_against_two_is_irreconcilable_and_names_who_said_what() -> None:
    decision = _one({"ann": "A", "bob": "A", "cy": "B", "dee": "B"})
    assert decision.outcome == "irreconcilable" and decision.winner is None
    assert decision.margin == 0.0
    (reason,) = decision.reasons
    assert "ann, bob said A" in reason and "cy, dee said B" in reason
    assert "at least the split share of 25%" in reason


def test_a_lone_dissenter_below_the_split_share_does_not_split_the_panel() -> None:
    # 1 of 8 on the other side is 12.5% of the A/B weight: the majority's lead is tested.
    decision = _one({**{f"j{i}": "A" for i in range(7)}, "odd": "B"})
    assert decision.outcome == "winner" and decision.winner == "A"
    assert decision.margin == pytest.approx(0.75)
    assert decision.interval is not None and decision.interval[0] > 0
    assert decision.confidence == pytest.approx(decision.interval[0])


def test_a_small_majority_could_be_chance() -> None:
    # 4 to 1: the bootstrap over five judges often draws the dissenter three times.
    decision = _one({"a1": "A", "a2": "A", "a3": "A", "a4": "A", "b1": "B"})
    assert decision.outcome == "too_close"
    assert decision.interval is not None and decision.interval[0] <= 0 < decision.interval[1]
    assert decision.confidence == 0.0
    assert "includes 0: the lead could be chance" in decision.reasons[0]


def test_ties_holding_the_lead_are_too_close() -> None:
    decision = _one({"j1": "A", "j2": "tie", "j3": "tie", "j4": "tie"})
    assert decision.outcome == "too_close" and decision.winner is None
    assert decision.shares == {"A": 0.25, "B": 0.0, "tie": 0.75}
    assert "tie holds at least as much weight as A" in decision.reasons[0]


def test_margin_within_the_gap_is_too_close() -> None:
    thresholds = Thresholds(gap=0.9)
    table = _table([("q", f"j{i}", "A") for i in range(7)] + [("q", "j7", "tie")])
    (decision,) = decide_verdicts(table, thresholds=thresholds)
    assert decision.outcome == "too_close"
    assert decision.reasons[0].startswith("the A-B margin +0.875 is within 0.9")


def test_a_missing_judge_is_named_and_not_counted() -> None:
    rows = [("q1", j, "A") for j in ("j1", "j2", "j3")] + [("q2", j, "A") for j in ("j1", "j4")]
    first, second = decide_verdicts(_table(rows), thresholds=THRESHOLDS)
    assert first.judge_margins["j4"] is None
    assert first.shares == {"A": 1.0, "B": 0.0, "tie": 0.0}
    assert "judge j4 gave no verdict: unscored, left out of every statistic" in first.reasons
    assert first.outcome == "winner"
    assert second.judge_margins == {"j1": 1.0, "j2": None, "j3": None, "j4": 1.0}
    assert sum("gave no verdict" in r for r in second.reasons) == 2


def test_one_judge_is_insufficient() -> None:
    decision = _one({"solo": "A"})
    assert decision.outcome == "insufficient" and decision.interval is None
    assert decision.margin == 1.0 and decision.confidence == 0.0
    assert "only 1 of 1 judges" in decision.reasons[0]


def test_both_orders_disagreeing_count_as_tie_with_the_reason() -> None:
    rows = [
        ("q", "swayed", "A", "AB"),
        ("q", "swayed", "B", "BA"),
        ("q", "steady", "A", "AB"),
        ("q", "steady", "A", "BA"),
        ("q", "third", "A"),
    ]
    (decision,) = decide_verdicts(_table(rows), thresholds=THRESHOLDS)
    assert decision.judge_margins == {"swayed": 0.0, "steady": 1.0, "third": 1.0}
    # The steady judge's two readings count once.
    assert decision.shares == pytest.approx({"A": 2 / 3, "B": 0.0, "tie": 1 / 3})
    note = next(r for r in decision.reasons if "position-sensitive" in r)
    assert note.startswith("judge swayed is position-sensitive (A reading AB, B reading BA)")
    assert "counts as tie" in note
    assert not any("steady" in r for r in decision.reasons)


def test_zero_weight_judge_is_shown_but_not_counted() -> None:
    verdicts = {"j1": "A", "j2": "A", "j3": "A", "muted": "B"}
    decision = _one(verdicts, judge_weights={"j1": 1, "j2": 1, "j3": 1, "muted": 0})
    assert decision.judge_margins["muted"] == -1.0
    assert decision.weights["muted"] == 0.0
    assert decision.shares == {"A": 1.0, "B": 0.0, "tie": 0.0}
    assert decision.outcome == "winner"
    assert "judge muted has weight 0: its verdict B is not counted" in decision.reasons
    # Without the weight, one in four against is a split.
    assert _one(verdicts).outcome == "irreconcilable"
    # Only one judge left with a positive weight decides nothing.
    lone = _one(verdicts, judge_weights={"j1": 1, "j2": 0, "j3": 0, "muted": 0})
    assert lone.outcome == "insufficient"


def test_weights_shift_the_shares() -> None:
    decision = _one({"a": "A", "b": "B"}, judge_weights={"a": 3.0, "b": 1.0})
    assert decision.shares == {"A": 0.75, "B": 0.25, "tie": 0.0}
    assert decision.margin == pytest.approx(0.5)
    assert decision.outcome == "irreconcilable"  # 25% of the A/B weight is a split


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"judge_weights": {"j1": 1.0}}, "no weight for judge j2"),
        ({"judge_weights": {"j1": 1.0, "j2": -1.0}}, r"judge_weights\['j2'\] is -1.0"),
        ({"judge_weights": {"j1": 1.0, "j2": float("nan")}}, "finite number"),
        ({"items": [0, 5]}, "index 5"),
    ],
)
def test_bad_arguments_get_one_line_errors(kwargs: dict[str, object], message: str) -> None:
    table = _table([("q", "j1", "A"), ("q", "j2", "B")])
    with pytest.raises(ValueError, match=message) as error:
        decide_verdicts(table, thresholds=THRESHOLDS, **kwargs)  # type: ignore[arg-type]
    assert "\n" not in str(error.value)


# --- the vectorised engine against a plain per-item loop ------------------------------

SIGN = {0: 1.0, 1: -1.0, 2: 0.0}


def _reference(
    calls: dict[str, int], weights: dict[str, float], seed: int, thresholds: Thresholds
) -> dict[str, object]:
    """One item, judge by judge, as the module docstring states the rules."""
    counted = sorted((c, weights[j]) for j, c in calls.items() if weights[j] > 0)
    weighted = [sum(w for c, w in counted if c == k) for k in range(3)]
    total = sum(weighted)
    margin = (weighted[0] - weighted[1]) / total if total else None
    interval = None
    if len(counted) >= 2:
        m = len(counted)
        draws = np.random.default_rng([seed, m]).integers(0, m, size=(N_BOOT, m))
        b_first = sorted(counted, key=lambda cw: ({0: 1, 1: 0, 2: 2}[cw[0]], cw[1]))
        margins = [
            sum(SIGN[order[d][0]] * order[d][1] for d in row) / sum(order[d][1] for d in row)
            for order in (counted, b_first)
            for row in draws
        ]
        tail = (1 - thresholds.confidence) / 2
        low, high = np.quantile(margins, [tail, 1 - tail])
        interval = (float(low), float(high))
    a, b, tie = weighted
    if len(counted) < 2:
        outcome = "insufficient"
    elif a > 0 and b > 0 and min(a, b) / (a + b) >= SPLIT_SHARE:
        outcome = "irreconcilable"
    else:
        assert margin is not None and interval is not None
        chance = interval[0] <= 0 <= interval[1]
        close = tie >= max(a, b) or abs(margin) < thresholds.gap or chance
        outcome = "too_close" if close else "winner"
    return {"outcome": outcome, "margin": margin, "interval": interval}


def _random_table(rng: np.random.Generator, n_items: int, n_judges: int) -> VerdictTable:
    rows: list[tuple[str, ...]] = []
    lean = rng.random(n_items)
    for i in range(n_items):
        for j in range(n_judges):
            roll = rng.random()
            if roll < 0.15:
                continue  # unscored
            p = [lean[i] * 0.8, (1 - lean[i]) * 0.8, 0.2]
            if roll < 0.3:  # both orders
                for order in ("AB", "BA"):
                    rows.append((f"i{i}", f"j{j}", VERDICTS[rng.choice(3, p=p)], order))
            else:
                rows.append((f"i{i}", f"j{j}", VERDICTS[rng.choice(3, p=p)]))
    return _table(rows)


@pytest.mark.parametrize("seed", [0, 1])
def test_vectorised_decisions_equal_a_per_item_loop(seed: int) -> None:
    rng = np.random.default_rng(seed)
    table = _random_table(rng, 150, 6)
    weights = {
        j: float(w) for j, w in zip(table.judges, rng.choice([0, 0.5, 1, 2], 6), strict=True)
    }
    decisions = decide_verdicts(table, thresholds=THRESHOLDS, judge_weights=weights, seed=seed)
    matrix = verdict_matrix(table)
    assert len(decisions) == len(table.items)
    for i, decision in enumerate(decisions):
        calls = {j: int(c) for j, c in zip(table.judges, matrix.calls[i], strict=True) if c >= 0}
        expected = _reference(calls, weights, seed, THRESHOLDS)
        assert decision.item == table.items[i]
        assert decision.outcome == expected["outcome"]
        assert decision.margin == pytest.approx(expected["margin"])
        assert decision.interval == pytest.approx(expected["interval"])
        assert decision.judge_margins == {
            j: SIGN[calls[j]] if j in calls else None for j in table.judges
        }
        # Deciding the item alone gives the same decision: no item leaks into another.
        (alone,) = decide_verdicts(
            table, thresholds=THRESHOLDS, judge_weights=weights, seed=seed, items=[i]
        )
        assert alone == decision
    assert {d.outcome for d in decisions} >= {"winner", "too_close", "irreconcilable"}


def test_position_sensitive_calls_follow_the_readings() -> None:
    rows: list[tuple[str, ...]] = [("q", "j", "A", "AB"), ("q", "j", "A", "BA")]
    rows += [("r", "j", "tie", "AB")]
    rows += [("r", "j", "B", "BA"), ("s", "j", "B")]
    matrix = verdict_matrix(_table(rows))
    np.testing.assert_array_equal(matrix.calls[:, 0], [0, 2, 1])
    np.testing.assert_array_equal(matrix.position_sensitive[:, 0], [False, True, False])
    assert matrix.readings == {(1, 0): [("AB", "tie"), ("BA", "B")]}


def test_planted_panel_decides_mostly_right() -> None:
    accuracies = {"a": 0.9, "b": 0.85, "c": 0.8, "d": 0.75, "e": 0.7}
    judges, truth = planted_verdicts(3000, accuracies, people=1, people_accuracy=1.0, seed=4)
    decisions = decide_verdicts(judges, thresholds=THRESHOLDS)
    true_calls = verdict_matrix(truth).calls[:, 0]
    winners = [
        (d.winner, VERDICTS[t]) for d, t in zip(decisions, true_calls, strict=True) if d.winner
    ]
    declared_accuracy = np.mean([w == t for w, t in winners])
    # Gated: the declared verdicts beat the best judge, on fewer than all items.
    assert declared_accuracy > 0.9
    assert 0.3 < len(winners) / len(decisions) < 1.0


# --- the split share: a threshold, and it counts weight, not heads ---------------------


def test_the_split_share_is_a_threshold_quoted_in_the_reason() -> None:
    # One in five against is 20% of the A/B weight: no split at 0.25, a split at 0.2.
    verdicts = {**{f"j{i}": "A" for i in range(4)}, "odd": "B"}
    assert _one(verdicts).outcome != "irreconcilable"
    table = _table([("q", judge, verdict) for judge, verdict in verdicts.items()])
    (split,) = decide_verdicts(table, thresholds=Thresholds(split_share=0.2))
    assert split.outcome == "irreconcilable"
    assert "at least the split share of 20%" in split.reasons[0]
    assert "odd said B" in split.reasons[0]


@pytest.mark.parametrize("share", [0.0, -0.1, 0.51, 1.0])
def test_a_split_share_outside_its_domain_is_refused(share: float) -> None:
    with pytest.raises(ValidationError, match="split_share"):
        Thresholds(split_share=share)


def test_the_split_share_is_read_from_the_config_and_refused_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "panel.toml"
    config.write_text("[thresholds]\nsplit_share = 0.4\n")
    assert load_config(config).thresholds.split_share == 0.4
    config.write_text("[thresholds]\nsplit_share = 0.6\n")
    with pytest.raises(ConfigurationError) as error:
        load_config(config)
    message = str(error.value)
    assert "thresholds.split_share" in message and "0.5" in message and "\n" not in message


@pytest.mark.parametrize("light", [0.0, 1e-9, 0.05])
def test_a_weightless_or_light_dissenter_does_not_split_the_panel(light: float) -> None:
    verdicts = {"j1": "A", "j2": "A", "j3": "A", "odd": "B"}
    weights = {"j1": 1.0, "j2": 1.0, "j3": 1.0, "odd": light}
    decision = _one(verdicts, judge_weights=weights)
    assert decision.outcome == "winner" and decision.winner == "A"
    # The same head count with equal weights is a split (one in four).
    assert _one(verdicts).outcome == "irreconcilable"


def test_a_heavy_dissenter_splits_the_panel() -> None:
    # Four against one by heads, but the one carries 2 of 6 of the A/B weight (33%).
    verdicts = {**{f"j{i}": "A" for i in range(4)}, "heavy": "B"}
    assert _one(verdicts).outcome != "irreconcilable"
    weights = {**{f"j{i}": 1.0 for i in range(4)}, "heavy": 2.0}
    decision = _one(verdicts, judge_weights=weights)
    assert decision.outcome == "irreconcilable"
    assert "the smaller side holds 33%" in decision.reasons[0]


def test_the_tie_rule_counts_weight_not_heads() -> None:
    # Three heads say tie, one says A: tie leads by heads but not by weight.
    verdicts = {"a": "A", "t1": "tie", "t2": "tie", "t3": "tie", "a2": "A"}
    assert _one(verdicts).outcome == "too_close"
    weights = {"a": 5.0, "a2": 5.0, "t1": 0.1, "t2": 0.1, "t3": 0.1}
    decision = _one(verdicts, judge_weights=weights)
    assert not any("tie holds" in r for r in decision.reasons)
    # And heavy ties hold the lead against more heads for A.
    heavy_ties = {"a": 0.1, "a2": 0.1, "t1": 1.0, "t2": 0.0, "t3": 0.0}
    decision = _one(verdicts, judge_weights=heavy_ties)
    assert decision.outcome == "too_close"
    assert "tie holds at least as much weight as A" in decision.reasons[0]
