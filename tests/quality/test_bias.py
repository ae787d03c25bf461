"""Position bias: planted, then controlled by counterbalancing, detected by the audit."""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from debate import FunctionModel, MultiJudgePanel, RunConfig, run_debate_sync
from debate.api import write_result
from debate.models import Message
from debate.models.test import TestModel
from debate.quality import audit
from debate.storage import RunStore
from tests.support.helpers import as_result, graded, role_of, schema_ids, transcript

BOOST = 2


def biased_judges(quality: dict[str, float], seed: int, *, noise: float = 0.6):  # type: ignore[no-untyped-def]
    """Judges that score true quality plus noise, and +2 for whatever they read first."""

    def reply(messages: list[Message], schema: type[BaseModel]) -> str:
        role = role_of(messages)
        shown = schema_ids(schema)  # the reply schema lists the arguments in shown order
        rng = random.Random(f"{seed}:{role}:{','.join(shown)}")
        scores = {}
        for position, arg_id in enumerate(shown):
            value = quality[arg_id] + rng.gauss(0, noise) + (BOOST if position == 0 else 0)
            scores[arg_id] = graded(int(min(10, max(1, round(value)))), note="")
        return json.dumps({"scores": scores, "key_finding": "k"})

    return reply


def close_debate(seed: int) -> dict[str, float]:
    """CON slightly better than PRO."""
    rng = random.Random(seed)
    quality = {f"PRO-{i}": rng.uniform(4.5, 7.5) for i in (1, 2, 3)}
    quality.update({f"CON-{i}": v + 0.4 for i, v in zip((1, 2, 3), quality.values(), strict=True)})
    return quality


def decide(quality: dict[str, float], seed: int, mode: str, *, boost: bool) -> str:
    global BOOST
    saved = BOOST
    BOOST = 2 if boost else 0
    try:
        config = RunConfig(model="f", presentation=mode, thresholds={"gap": 0.0})  # type: ignore[arg-type]
        panel = MultiJudgePanel(models=FunctionModel(biased_judges(quality, seed)), config=config)
        result = panel.evaluate_sync(transcript(), seed=seed)
    finally:
        BOOST = saved
    return f"{result.decision.outcome}:{result.decision.winner}"


def test_counterbalancing_keeps_decisions_that_a_fixed_order_flips() -> None:
    """A wrong verdict: the biased panel names a winner the unbiased panel did not name."""
    changed: Counter[str] = Counter()
    wrong: Counter[str] = Counter()
    n = 60
    for seed in range(n):
        quality = close_debate(seed)
        for mode in ("fixed", "counterbalanced"):
            unbiased = decide(quality, seed, mode, boost=False)
            biased = decide(quality, seed, mode, boost=True)
            changed[mode] += unbiased != biased
            wrong[mode] += biased.startswith("winner") and biased != unbiased
    print(
        f"\nplanted +{BOOST} primacy bias over {n} close debates: fixed order changed "
        f"{changed['fixed']} decisions ({wrong['fixed']} to a wrong or unearned winner); "
        f"counterbalanced changed {changed['counterbalanced']} "
        f"({wrong['counterbalanced']} to a wrong or unearned winner, the rest to 'irreconcilable')"
    )
    # The planted bias moves decisions under a fixed order. Before verdicts needed the
    # margin's interval to exclude 0, 10+ of them became unearned winners; now the interval
    # (arguments resampled, so one boosted argument cannot carry it) refuses every one, and
    # counterbalancing still turns the rest into 'irreconcilable', never into a winner.
    assert changed["fixed"] >= 10
    assert wrong["fixed"] == 0
    assert wrong["counterbalanced"] == 0


def test_audit_detects_planted_position_bias(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "store.sqlite")
    for seed in range(12):
        quality = close_debate(seed)
        config = RunConfig(model="f")
        panel = MultiJudgePanel(models=FunctionModel(biased_judges(quality, seed)), config=config)
        debate = transcript()
        store.record(as_result(panel.evaluate_sync(debate, seed=seed), debate, config))
    rows = audit(store).judges
    assert len(rows) == 4
    for row in rows:
        est = row.primacy  # points gained when read first, within arguments
        assert est.value is not None and est.low is not None
        assert est.value > 0.2 and est.low > 0, row  # clearly positive, CI excludes 0
        assert est.n == 12 * 6
        assert row.self_preference.note is not None  # no own-model arguments here


def test_audit_refuses_small_samples(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "s.sqlite")
    store.record(run_debate_sync("Should we?", model=TestModel(seed=1), seed=1))
    row = audit(store).judges[0]
    assert row.primacy.value is None
    assert "too small" in (row.primacy.note or "")


def test_swap_flags_position_sensitive_arguments() -> None:
    def reply(messages: list[Message], schema: type[BaseModel]) -> str:
        shown = schema_ids(schema)
        scores = {}
        for position, arg_id in enumerate(shown):
            first = position == 0
            standing = "UPHELD" if first else "PARTIALLY_UPHELD"
            s = 8 if first else 5
            scores[arg_id] = {
                "logic": s,
                "evidence": s,
                "responsiveness": s,
                "honesty": s,
                "standing": standing,
                "note": "",
            }
        return json.dumps({"scores": scores, "key_finding": "k"})

    config = RunConfig(model="f", swap=True)
    result = MultiJudgePanel(models=FunctionModel(reply), config=config).evaluate_sync(
        transcript(), seed=3
    )
    assert result.usage.calls == 8  # every judge read twice
    for e in result.evaluations:
        assert e.swap is not None and e.swap.scores is not None
        assert e.swap.position_sensitive  # the first-shown arguments moved
        assert e.swap.consistency is not None and e.swap.consistency < 1.0
        assert set(e.swap.positions) == set(e.positions)
        assert e.swap.positions != e.positions
    assert any("changed when the sides were swapped" in r for r in result.decision.reasons)


def _jittered_model(seed: int) -> FunctionModel:
    """Same reply for the same request, delivered after a random delay."""

    async def reply(messages: list[Message], schema: type[BaseModel]) -> Any:
        digest = hashlib.sha256("".join(m.content for m in messages).encode()).hexdigest()
        await asyncio.sleep(random.random() * 0.05)  # arrival order differs run to run
        from debate.models.test import fill_schema

        return fill_schema(schema.model_json_schema(), random.Random(digest))

    return FunctionModel(reply, name="jitter")


def test_same_seed_same_replies_give_byte_identical_result(tmp_path: Path) -> None:
    outs = []
    for attempt in range(2):
        random.seed(attempt)  # different delays, so replies arrive in a different order
        result = run_debate_sync("Should we adopt the plan?", model=_jittered_model(0), seed=42)
        outs.append(write_result(result, tmp_path / str(attempt)).read_bytes())
    assert outs[0] == outs[1]
    assert json.loads(outs[0])["seed"] == 42


def test_cli_seed_from_env_and_drawn_seed_is_recorded(tmp_path: Path, monkeypatch: Any) -> None:
    from debate._cli.main import main

    monkeypatch.setenv("DEBATE_SEED", "77")
    assert (
        main(["run", "Should we?", "--model", "scripted", "--out", str(tmp_path / "a"), "--quiet"])
        == 0
    )
    run = json.loads((tmp_path / "a" / "run.json").read_text())
    assert run["seed"] == 77 and run["seed_source"] == "env" and run["status"] == "finished"
    assert json.loads((tmp_path / "a" / "result.json").read_text())["seed"] == 77
    monkeypatch.delenv("DEBATE_SEED")
    assert (
        main(["run", "Should we?", "--model", "scripted", "--out", str(tmp_path / "b"), "--quiet"])
        == 0
    )
    run = json.loads((tmp_path / "b" / "run.json").read_text())
    result = json.loads((tmp_path / "b" / "result.json").read_text())
    assert run["seed_source"] == "drawn" and result["seed"] == run["seed"]
    # the same command again in the same folder replays that debate instead of a new one
    assert main(["run", "Should we?", "--model", "scripted", "--out", str(tmp_path / "b")]) == 0
    again = json.loads((tmp_path / "b" / "run.json").read_text())
    assert again["seed_source"] == "repeated" and again["seed"] == run["seed"]
    assert json.loads((tmp_path / "b" / "result.json").read_text()) == result
    assert "started" not in result and "host" not in json.dumps(result["config"])
