"""Track records and validity: planted judges, with the function model; readers on inline items."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from debate import FunctionModel, MultiJudgePanel, RunConfig
from debate.judgments import TrackRecords
from debate.models import Message
from debate.panel import identity
from debate.quality._benchmark import DebateItem, calibrate_debates
from debate.quality._validity import format_report, read_pandalm, read_ukpconvarg
from debate.runtime import PromptRenderer, Run
from tests.support.helpers import role_of, schema_ids, transcript

GOOD = {"PRO-1": 7, "PRO-2": 6, "PRO-3": 5, "CON-1": 4, "CON-2": 4, "CON-3": 3}
BAD = {k: GOOD[k.replace("PRO", "X").replace("CON", "PRO").replace("X", "CON")] for k in GOOD}
LOOSE = {"alpha": -1.0, "kappa": -1.0, "variance": 100.0, "gap": 0.05}


def judges(plan):  # type: ignore[no-untyped-def]
    """``plan(role, topic) -> scores by argument id``."""

    def reply(messages: list[Message], schema: type[BaseModel]) -> str:
        role = role_of(messages)
        topic = messages[1].content
        scores = plan(role, topic)
        out = {
            a: {
                "logic": scores[a],
                "evidence": scores[a],
                "responsiveness": scores[a],
                "honesty": scores[a],
                "standing": "UPHELD" if scores[a] >= 5 else "REFUTED",
                "note": "",
            }
            for a in schema_ids(schema)
        }
        return json.dumps({"scores": out, "key_finding": "k"})

    return reply


def items(n: int) -> list[DebateItem]:
    return [
        DebateItem(id=f"c{i}", transcript=transcript(topic=f"Calibration item {i}?"), verdict="PRO")
        for i in range(n)
    ]


def test_wrong_judge_loses_weight_and_the_contested_vote_moves(tmp_path: Path) -> None:
    def plan(role: str, topic: str) -> dict[str, int]:
        if "Contested" in topic:
            return GOOD if role in ("technical", "general") else BAD
        return BAD if role == "risk" else GOOD

    model = FunctionModel(judges(plan), name="fn")
    config = RunConfig(model="fn", thresholds=LOOSE, presentation="fixed")
    contested = transcript(topic="Contested: should we?")
    records = TrackRecords(tmp_path / "store.sqlite")

    before = MultiJudgePanel(
        models=model, config=config, run=Run(history=records.all_accuracies())
    ).evaluate_sync(contested, seed=1)
    report = asyncio.run(calibrate_debates(items(30), config=config, records=records, model=model))
    after = MultiJudgePanel(
        models=model, config=config, run=Run(history=records.all_accuracies())
    ).evaluate_sync(contested, seed=1)

    rows = {r.judge: r for r in report.rows}
    assert rows["risk"].accuracy.value == 0.0 and rows["technical"].accuracy.value == 1.0
    assert report.accuracy_after["risk"] == pytest.approx(10 / 40)  # shrunk toward 1.0
    wb, wa = before.vote.judge_weights, after.vote.judge_weights
    assert wa["risk"] < wb["risk"]
    share = lambda w, k: w[k] / sum(w.values())  # noqa: E731
    assert share(wa, "technical") > share(wb, "technical")
    assert before.decision.outcome == "too_close"
    # The weights move the vote toward the accurate judges...
    assert after.vote.margin is not None and before.vote.margin is not None
    assert after.vote.margin > before.vote.margin + 0.05
    assert after.vote.margin_points is not None and after.vote.margin_points > 0
    # ...but two judges against two is no verdict however they are weighted: resampling the
    # judges puts 0 inside the interval, so the panel stays too close to call (before
    # issue 15 the weighted margin alone named PRO the winner here).
    assert after.vote.margin_ci is not None and after.vote.margin_ci[0] < 0
    assert after.decision.outcome == "too_close"


def test_track_record_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    key = identity("risk", "m")
    TrackRecords(path).add([(key, "i1", "d", "a", "a"), (key, "i2", "d", "a", "b")])
    again = TrackRecords(path).get(key)
    assert (again.items, again.correct) == (2, 1)
    assert again.accuracy == pytest.approx((1 + 10) / (2 + 10))


def test_reported_accuracy_of_an_80_percent_judge_covers_it(tmp_path: Path) -> None:
    def plan(role: str, topic: str) -> dict[str, int]:
        number = int(topic.split("Calibration item ")[1].split("?")[0])
        wrong = role == "technical" and number % 5 == 0
        return BAD if wrong else GOOD

    model = FunctionModel(judges(plan), name="fn")
    config = RunConfig(model="fn", presentation="fixed")
    report = asyncio.run(
        calibrate_debates(
            items(40), config=config, records=TrackRecords(tmp_path / "s.sqlite"), model=model
        )
    )
    row = next(r for r in report.rows if r.judge == "technical")
    assert row.items == 40 and row.accuracy.value == pytest.approx(0.8)
    assert row.accuracy.low is not None and row.accuracy.high is not None
    assert row.accuracy.low < 0.8 < row.accuracy.high


def test_readers_on_inline_items(tmp_path: Path) -> None:
    ukp = tmp_path / "ukp.jsonl"
    annotations = [
        {"worker": f"w{i}", "label": label, "reason": "", "mace_competence": 0.5}
        for i, label in enumerate(["a1", "a1", "a2", "a1", "equal"])
    ]
    ukp.write_text(
        json.dumps(
            {
                "id": "x",
                "debate_title": "T",
                "stance": "Yes",
                "arg1": "A",
                "arg2": "B",
                "annotations": annotations,
            }
        )
        + "\n"
    )
    [item] = read_ukpconvarg(ukp)
    assert item.labels == ["a", "a", "b", "a", "tie"] and item.majority == "a"
    assert item.people_split  # two of five dissent
    panda = tmp_path / "testset.json"
    panda.write_text(
        json.dumps(
            [
                {
                    "idx": 0,
                    "instruction": "Say hi",
                    "input": "",
                    "response1": "hi",
                    "response2": "hello",
                    "annotator1": 1,
                    "annotator2": 2,
                    "annotator3": 0,
                }
            ]
        )
    )
    (tmp_path / "baseline_judges").mkdir()
    (tmp_path / "baseline_judges" / "gpt-3.5-turbo-testset-v1.json").write_text(
        json.dumps([{"idx": 0, "gpt_result": "Tie"}])
    )
    [p] = read_pandalm(panda)
    assert p.majority is None and p.people_split and p.baselines == {"gpt-3.5-turbo": "tie"}


def test_dimension_agreement_with_peoples_scores_is_reported_and_stored(tmp_path: Path) -> None:
    def plan(role: str, topic: str) -> dict[str, int]:
        return BAD if role == "risk" else GOOD

    people = {arg: {"logic": float(score), "honesty": float(score)} for arg, score in GOOD.items()}
    scored = [
        DebateItem(
            id=f"s{i}",
            transcript=transcript(topic=f"Calibration item {i}?"),
            verdict="PRO",
            people_scores=people,
        )
        for i in range(3)
    ]
    model = FunctionModel(judges(plan), name="fn")
    config = RunConfig(model="fn", presentation="fixed")
    records = TrackRecords(tmp_path / "store.sqlite")
    report = asyncio.run(calibrate_debates(scored, config=config, records=records, model=model))

    technical, risk = report.dimensions["technical"], report.dimensions["risk"]
    assert set(technical) == {"logic", "honesty"}
    assert technical["logic"].pairs == 18 and technical["logic"].alpha == pytest.approx(1.0)
    assert risk["logic"].alpha is not None and risk["logic"].alpha < 0
    stored = TrackRecords(tmp_path / "store.sqlite").get(identity("risk", "fn"))
    assert stored.dimensions["honesty"].pairs == 18
    assert stored.dimensions["honesty"].alpha == pytest.approx(risk["honesty"].alpha)
    assert "risk vs people's scores, interval alpha: honesty" in format_report(report, "t")


def test_people_scores_on_an_unknown_dimension_are_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown dimension 'charm'; use logic, evidence"):
        DebateItem(
            id="x",
            transcript=transcript(),
            verdict="PRO",
            people_scores={"PRO-1": {"charm": 5.0}},
        )


def test_an_edited_role_template_is_a_new_judge_without_the_old_record(tmp_path: Path) -> None:
    shipped = identity("risk", "fn")
    assert shipped == identity("risk", "fn", PromptRenderer())
    records = TrackRecords(tmp_path / "store.sqlite")
    records.add([(shipped, f"i{n}", "d", "a", "b") for n in range(30)])  # always wrong
    model = FunctionModel(judges(lambda role, topic: GOOD), name="fn")

    weights = MultiJudgePanel(
        models=model, config=RunConfig(model="fn"), run=Run(history=records.all_accuracies())
    ).judge_weights("default")
    assert weights["risk"] == pytest.approx(0.7 * 0.25 + 0.3 * 10 / 40)

    edited = tmp_path / "templates"
    edited.mkdir()
    source = PromptRenderer().render("judge_role_risk.md.jinja")
    (edited / "judge_role_risk.md.jinja").write_text(source + "\nWeigh reversibility first.\n")
    config = RunConfig(model="fn", templates=str(edited))
    panel = MultiJudgePanel(models=model, config=config, run=Run(history=records.all_accuracies()))
    assert panel.identity(config.judges[2]) != shipped
    assert panel.judge_weights("default")["risk"] == pytest.approx(0.7 * 0.25 + 0.3)
