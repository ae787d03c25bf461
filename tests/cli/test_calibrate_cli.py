"""`debate calibrate` end to end against an OpenAI-compatible test server on 127.0.0.1."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from debate._cli.main import main
from debate.judgments import TrackRecords
from debate.panel import identity
from debate.quality import CalibrationReport
from tests.support.helpers import transcript
from tests.support.openai_server import FakeOpenAIServer, Reply

GOOD = "This answer is the GOOD one."


def prefers_the_good_answer(body: dict[str, Any]) -> Reply:
    """A reviewer that scores the response containing GOOD 9 and any other 3."""
    user = body["messages"][-1]["content"]
    blocks = dict(
        re.findall(r"## Response (\w)\n(.*?)(?=\n## Response |\n# Your task)", user, re.S)
    )
    scores = {}
    for label, text in blocks.items():
        value = 9 if "GOOD" in text else 3
        scores[label] = {
            "accuracy": value,
            "relevance": value,
            "completeness": value,
            "conciseness": value,
            "clarity": value,
            "notes": "",
        }
    ranking = sorted(scores, key=lambda k: -scores[k]["accuracy"])
    return Reply(content=json.dumps({"evaluations": scores, "ranking": ranking}))


def test_calibrate_pairwise_file_reports_and_updates_track_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = tmp_path / "items.jsonl"
    rows = [
        # people prefer a (the GOOD one) on three items, b (GOOD) on one, and split on one
        {"id": "1", "question": "Q1?", "a": GOOD, "b": "weak", "labels": ["a", "a", "b"]},
        {"id": "2", "question": "Q2?", "a": GOOD, "b": "weak", "labels": ["a", "a", "a"]},
        {"id": "3", "question": "Q3?", "a": "weak", "b": GOOD, "labels": ["b", "b", "tie"]},
        {"id": "4", "question": "Q4?", "a": GOOD, "b": "weak", "labels": ["b", "b", "a"]},
        {"id": "5", "question": "Q5?", "a": GOOD, "b": "weak", "labels": ["a", "b", "tie"]},
    ]
    people = {"a": {"accuracy": 8.5, "clarity": 9.0}, "b": {"accuracy": 3.5, "clarity": 2.0}}
    rows[0]["people_scores"] = rows[1]["people_scores"] = people
    items.write_text("".join(json.dumps(r) + "\n" for r in rows))
    store = tmp_path / "store.sqlite"
    out_dir = tmp_path / "out"
    with FakeOpenAIServer(responder=prefers_the_good_answer) as server:
        argv = ["calibrate", str(items), "--format", "pairwise", "--model", "m"]
        argv += ["--base-url", server.base_url, "--api-key-env", "", "--out", str(out_dir)]
        code = main([*argv, "--store", str(store), "--json"])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert len(server.records) == 5 * 4  # every item, every reviewer, one call each
        # a re-run replays every call from OUT/cache.sqlite; --no-store leaves records alone
        assert main([*argv, "--no-store"]) == 0
        assert len(server.records) == 5 * 4
    again = capsys.readouterr().out
    assert "not stored: --no-store" in again and "technical" in again
    report = CalibrationReport.model_validate_json(out)
    assert CalibrationReport.model_validate_json((out_dir / "calibration.json").read_text()) == (
        report
    )
    by_judge = {r.judge: r for r in report.rows}
    # item 5 has no majority: it counts for tie behaviour, not for accuracy
    assert by_judge["technical"].items == 4
    assert by_judge["technical"].accuracy.value == pytest.approx(3 / 4)
    assert by_judge["panel"].accuracy.value == pytest.approx(3 / 4)
    assert report.alpha_judges == pytest.approx(1.0)
    accuracy = report.dimensions["risk"]["accuracy"]
    assert accuracy.pairs == 4 and accuracy.alpha is not None and accuracy.alpha > 0.9
    record = TrackRecords(store).get(identity("technical", "m"))
    assert (record.items, record.correct) == (4, 3)
    assert record.dimensions["clarity"].pairs == 4
    assert report.accuracy_after["technical"] == pytest.approx((3 + 10) / (4 + 10))


def test_calibrate_unknown_file_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["calibrate", str(tmp_path / "missing.jsonl"), "--format", "pandalm"])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.startswith("error: pandalm file") and "missing.jsonl" in err
    assert len(err.strip().splitlines()) == 1


def test_calibrate_debate_transcripts_with_known_verdicts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = tmp_path / "verdicts.jsonl"
    lines = [
        {"id": f"d{i}", "transcript": transcript(topic=f"Item {i}?").model_dump(), "verdict": v}
        for i, v in enumerate(["PRO", "CON", "TIE"])
    ]
    items.write_text("".join(json.dumps(line) + "\n" for line in lines))
    argv = ["calibrate", str(items), "--format", "debate", "--model", "scripted"]
    code = main([*argv, "--store", str(tmp_path / "s.sqlite"), "--out", str(tmp_path), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    report = CalibrationReport.model_validate_json(out)
    assert [r.judge for r in report.rows] == ["technical", "business", "risk", "general", "panel"]
    assert [r.items for r in report.rows[:4]] == [3, 3, 3, 3]  # every judge called every item
    assert report.rows[4].items <= 3  # the panel makes no call when it splits
    records = TrackRecords(tmp_path / "s.sqlite")
    calls = records.get(identity("technical", "scripted"))
    assert calls.items == report.rows[0].items
    assert calls.correct == round((report.rows[0].accuracy.value or 0) * calls.items)


def test_a_bad_verdict_fails_when_read_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = tmp_path / "verdicts.jsonl"
    good = {"id": "d0", "transcript": transcript().model_dump(), "verdict": "PRO"}
    items.write_text(json.dumps(good) + "\n" + json.dumps({**good, "verdict": "YES"}) + "\n")
    code = main(["calibrate", str(items), "--format", "debate", "--model", "scripted"])
    err = capsys.readouterr().err
    assert code == 2 and "line 2" in err and "verdict" in err
