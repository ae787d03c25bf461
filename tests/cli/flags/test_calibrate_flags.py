"""``debate calibrate``'s own flags."""

from __future__ import annotations

import json
from typing import Any

import pytest

from debate.judgments import TrackRecords
from debate.panel import identity
from debate.runtime import PromptRenderer
from tests.cli.flags.harness import (
    Harness,
)
from tests.support.helpers import RESPONSE, review_reply
from tests.support.openai_server import FakeOpenAIServer, Reply


def test_calibrate_file_and_format(h: Harness) -> None:
    debate = h.run("calibrate")
    pairwise = h.run("calibrate", argv=["calibrate", str(h.pairs), "--format", "pairwise"])
    assert debate.code == pairwise.code == 0, pairwise.err
    assert debate.file("calibration.json")["dataset"] == "debate"
    assert pairwise.file("calibration.json")["dataset"] == "pairwise"
    assert all('"evaluations"' in json.dumps(r.body["response_format"]) for r in pairwise.records)


def test_calibrate_limit_takes_the_first_items(h: Harness) -> None:
    argv = ["calibrate", str(h.items), "--format", "debate"]
    every, first = h.run("calibrate", argv=argv), h.run("calibrate", "--limit", "1", argv=argv)
    assert every.file("calibration.json")["items"] == 2
    assert first.file("calibration.json")["items"] == 1


def test_calibrate_concurrency_bounds_items_in_flight(h: Harness) -> None:
    argv = ["calibrate", str(h.items), "--format", "debate"]
    with FakeOpenAIServer(latency=0.5) as one:
        assert h.run("calibrate", "--concurrency", "1", server=one, argv=argv).code == 0
    with FakeOpenAIServer(latency=0.5) as two:
        assert h.run("calibrate", "--concurrency", "2", server=two, argv=argv).code == 0
    assert one.max_in_flight <= 4 < two.max_in_flight


def test_pairwise_accuracy_after_keys_each_judge_by_its_own_model(h: Harness) -> None:
    """A judge with a model of its own has its own track record, not the shared model's."""
    config = h.tmp / "own-models.toml"
    weights = "weights = {logic = 0.25, evidence = 0.25, responsiveness = 0.25, honesty = 0.25}"
    config.write_text(
        f'[[judges]]\nname = "a"\nrole = "technical"\n{weights}\n'
        f'[[judges]]\nname = "b"\nrole = "risk"\nmodel = "own-model"\n{weights}\n'
    )
    argv = ["calibrate", str(h.pairs), "--format", "pairwise", "--config", str(config)]
    server = FakeOpenAIServer()

    def prefer_no(body: dict[str, Any]) -> Reply:  # people chose "yes": every call is wrong
        shown = RESPONSE.findall(body["messages"][1]["content"])
        return Reply(content=review_reply({label: 9 if t == "no" else 2 for label, t in shown}))

    server.responder = prefer_no
    with server:
        run = h.run("calibrate", server=server, argv=argv)
    assert run.code == 0, run.err
    assert {r.body["model"] for r in run.records} == {"m", "own-model"}

    records = TrackRecords(h.tmp / "store.sqlite")
    own = identity("risk", "own-model", PromptRenderer(None))
    shared = identity("risk", "m", PromptRenderer(None))
    assert records.get(own).items == 1 and records.get(shared).items == 0
    report = run.file("calibration.json")
    assert records.all_accuracies()[own] < 1.0  # one wrong call
    assert report["accuracy_after"]["b"] == pytest.approx(records.all_accuracies()[own])
