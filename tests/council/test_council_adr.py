"""The council as ADR-007 and ADR-016 state it (issue 29, part 6): ceilings, shared ranks,
behavioural anchors.

Reviewers are function models whose rubric scores and rankings we plant, so each test
states the ballot and the figure the council must report; the "before" figure of the
issue is in the docstring.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel

from debate import FunctionModel, RunConfig
from debate._cli.main import main
from debate.council import run_council_sync
from debate.models import Message
from debate.quality import audit
from debate.records import COUNCIL_DIMENSIONS, DIMENSIONS, STANDINGS, Candidate, CouncilResult
from debate.report._council import render_council_html
from debate.runtime import PromptRenderer
from debate.stats import (
    Ranking,
    accuracy_ceiling,
    borda,
    ceiling_order,
    mean_interval,
    rubric_overall,
    t95,
)
from debate.storage import RunStore
from tests.council.test_council_rules import answer, reviewer
from tests.service.test_service_page import CHROMIUM, Browser
from tests.support.helpers import review_reply, shown_candidates


def council(
    ids: list[str], reviewers: Mapping[str, FunctionModel], **settings: Any
) -> CouncilResult:
    config = RunConfig(model="f", max_retries=0, council=settings)
    cands = [Candidate(id=c, text=answer(c)) for c in ids]
    return run_council_sync(
        "Which answer is best?", cands, reviewers=reviewers, config=config, seed=5
    )


# --- the accuracy ceiling binds every method ------------------------------------------

POLISHED_LIE = {"accuracy": 3, "relevance": 9, "completeness": 9, "conciseness": 9, "clarity": 9}
PLAIN_TRUTH = {"accuracy": 8, "relevance": 6, "completeness": 6, "conciseness": 6, "clarity": 6}
MIDDLING = dict.fromkeys(COUNCIL_DIMENSIONS, 5)


@pytest.mark.parametrize("method", ["borda", "normalized", "rubric"])
def test_an_accuracy_3_answer_never_ranks_first(method: str) -> None:
    """Before: under --method borda the polished lie A ranked first (Borda 2.00, 3 of 3
    first places), since every reviewer ranked it first and Borda read only the ranking."""
    scores = {"A": POLISHED_LIE, "B": PLAIN_TRUTH, "C": MIDDLING}
    reviewers = {f"r{i}": reviewer(f"r{i}", scores, ["A", "B", "C"]) for i in range(3)}
    result = council(["A", "B", "C"], reviewers, method=method)
    assert [e.candidate for e in result.rankings] == ["B", "C", "A"]
    a = next(e for e in result.rankings if e.candidate == "A")
    assert a.first_places == 0 and a.borda == 0.0 and a.raw_mean == 4.0
    assert result.reviews[0].ranking == ["A", "B", "C"]  # the record keeps what was said


def test_random_ballots_never_put_a_capped_answer_above_one_scored_past_its_cap() -> None:
    rng = random.Random(29)
    for _ in range(500):
        ids = [f"c{i}" for i in range(rng.randint(2, 6))]
        accuracy = {c: rng.randint(1, 10) for c in ids}
        overall = {
            c: rubric_overall({d: rng.randint(1, 10) for d in COUNCIL_DIMENSIONS} | {"accuracy": a})
            for c, a in accuracy.items()
        }
        caps = {c: cap for c, a in accuracy.items() if (cap := accuracy_ceiling(a)) is not None}
        order = rng.sample(ids, rng.randint(1, len(ids)))  # partial rankings too
        ballot = ceiling_order(order, overall, caps)
        assert len(set(ballot)) == len(ballot) and set(order) <= set(ballot)
        for c, cap in caps.items():
            if c in ballot:
                above = [d for d in ids if d != c and overall[d] > cap]
                assert all(ballot.index(d) < ballot.index(c) for d in above)
        uncapped = [c for c in order if c not in caps]
        assert [c for c in ballot if c in uncapped] == uncapped  # their order is the reviewer's
        top = ballot[0]
        if top in caps and accuracy[top] <= 3:
            assert all(overall[d] <= 4.0 for d in ids)  # first only when nothing scored higher


def test_the_ceiling_thresholds_are_adr_016s() -> None:
    assert [accuracy_ceiling(a) for a in (1, 4, 4.99, 5, 6.5, 7, 10)] == [
        4.0,
        4.0,
        4.0,
        7.0,
        7.0,
        None,
        None,
    ]
    assert rubric_overall(POLISHED_LIE) == 4.0  # 7.2 by the weights alone


# --- equal Borda scores share a rank ---------------------------------------------------


def test_equal_borda_scores_share_a_rank() -> None:
    """Before: a and b, both 1.5 points, got ranks 1 and 2 (the name broke the tie)."""
    rows = borda([Ranking("r1", ["a", "b", "c"]), Ranking("r2", ["b", "a", "c"])], ["a", "b", "c"])
    assert [(e.candidate, e.borda, e.rank) for e in rows] == [
        ("a", 1.5, 1),
        ("b", 1.5, 1),
        ("c", 0.0, 3),
    ]


def test_shared_ranks_keep_their_listing_and_a_voteless_candidate_ranks_last() -> None:
    rows = borda(
        [Ranking("r1", ["b", "a", "c"]), Ranking("r2", ["a", "c", "b"]), Ranking("r3", ["c"])],
        ["a", "b", "c", "d"],
    )
    assert [(e.candidate, e.rank) for e in rows] == [("a", 1), ("b", 2), ("c", 2), ("d", 4)]
    zero = borda([Ranking("r1", ["a", "b"])], ["a", "b", "c"])
    assert [(e.candidate, e.borda, e.votes, e.rank) for e in zero] == [
        ("a", 2.0, 1, 1),
        ("b", 1.0, 1, 2),
        ("c", 0.0, 0, 3),
    ]


def test_a_borda_council_reports_the_shared_rank() -> None:
    """Before: the council's Borda ranking printed "1. A" and "2. B" for equal points."""
    flat = {c: dict.fromkeys(COUNCIL_DIMENSIONS, 7) for c in "ABC"}
    reviewers = {
        "r1": reviewer("r1", flat, ["A", "B", "C"]),
        "r2": reviewer("r2", flat, ["B", "A", "C"]),
    }
    result = council(["A", "B", "C"], reviewers, method="borda")
    assert [(e.candidate, e.rank, e.borda) for e in result.rankings] == [
        ("A", 1, 1.5),
        ("B", 1, 1.5),
        ("C", 3, 0.0),
    ]


# --- behavioural anchors in the prompts -------------------------------------------------

ANCHOR_POINTS = ("2", "5", "8", "10")


def anchors(prompt: str, heading: str) -> list[str]:
    """The score points named in the indented lines under ``- heading:``, in order."""
    lines = prompt.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"- {heading}:"))
    points = []
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        point, _, description = line.strip().partition(": ")
        assert len(description.split()) >= 2, line  # says what the score looks like
        points.append(point)
    return points


def council_prompt() -> str:
    renderer = PromptRenderer().keyed(1)
    return renderer.render(
        "council_review.md.jinja",
        question="Q?",
        candidates=[{"label": "A", "text": "a"}, {"label": "B", "text": "b"}],
        labels=("A", "B"),
        perspective=None,
        safety_gate=True,
    )


def test_every_council_dimension_has_anchors_for_2_5_8_and_10() -> None:
    """Before: only accuracy had anchors (9-10, 5-6, 1-2), written inline."""
    prompt = council_prompt()
    for dimension in COUNCIL_DIMENSIONS:
        assert tuple(anchors(prompt, dimension)) == ANCHOR_POINTS, dimension


def test_every_debate_dimension_and_standing_has_anchors() -> None:
    """Before: the judges' prompt named the dimensions and standings with no anchors."""
    prompt = PromptRenderer().render("judge_system.md.jinja")
    for dimension in DIMENSIONS:
        assert tuple(anchors(prompt, dimension)) == ANCHOR_POINTS, dimension
    described = {
        line[2:].partition(":")[0]: line.partition(": ")[2]
        for line in prompt.splitlines()
        if line.startswith("- ") and line[2:].partition(":")[0] in STANDINGS
    }
    assert set(described) == set(STANDINGS)
    assert all(len(text.split()) >= 4 for text in described.values())


def test_anchor_lines_stay_short() -> None:
    """A line per score point: the embedded model pays for every token of the prompt."""
    for prompt in (council_prompt(), PromptRenderer().render("judge_system.md.jinja")):
        for line in prompt.splitlines():
            if line.startswith("  ") and line.strip().partition(":")[0] in ANCHOR_POINTS:
                assert len(line) <= 80, line


# --- the bias checks: length and harsh/generous reviewers, in the report --------------


def test_offsets_and_length_have_small_sample_intervals() -> None:
    """Four candidates, reviewers 2 points apart: the harsh one and the generous one show."""
    from tests.support.render_samples import council as sample

    result = sample()
    assert result.bias is not None
    offsets = {r.reviewer: r for r in result.bias.reviewers}
    harsh, lenient = offsets["harsh"].offset, offsets["lenient"].offset
    # harsh scores 8-6=2 below lenient's offset on A..D: differences from the others' mean
    assert harsh.value == pytest.approx(-2.0) and harsh.n == 4
    assert offsets["harsh"].leaning == "harsh" and offsets["lenient"].leaning == "generous"
    assert lenient.low is not None and lenient.high is not None and lenient.low > 0
    length = result.bias.length
    assert length.n == 4 and length.value is not None
    assert length.low is not None and length.high is not None
    assert length.low < length.value < length.high  # Fisher's interval, wide at n = 4
    plan = {"A": POLISHED_LIE, "B": PLAIN_TRUTH, "C": MIDDLING}
    pair = {n: reviewer(n, plan, ["B", "C", "A"]) for n in ("r1", "r2")}
    three = council(["A", "B", "C"], pair)
    assert three.bias is not None and three.bias.length.note == "fewer than 4 pairs"
    assert three.bias.length.n == 3 and three.bias.length.value is None
    same = three.bias.reviewers[0].offset  # identical reviewers: offset 0, zero-width interval
    assert (same.value, same.low, same.high, same.n) == (0.0, 0.0, 0.0, 3)
    assert three.bias.reviewers[0].leaning == "no evidence"


def test_small_sample_quantiles_match_students_t() -> None:
    from scipy import stats  # the package keeps its own table; scipy checks it

    for df in (1, 2, 3, 5, 10, 29, 30, 31, 60, 200):
        assert t95(df) == pytest.approx(float(stats.t.ppf(0.975, df)), abs=2e-4), df
    values = [1.0, 2.0, 4.0]
    interval = mean_interval(values)
    low, high = stats.t.interval(0.95, 2, loc=np.mean(values), scale=stats.sem(values))
    assert (interval.low, interval.high) == (
        pytest.approx(low, abs=1e-3),
        pytest.approx(high, abs=1e-3),
    )


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not on PATH")
def test_the_council_page_shows_the_bias_checks_in_chromium(tmp_path: Path) -> None:
    from tests.support.render_samples import council as sample

    page = tmp_path / "council.html"
    page.write_text(render_council_html(sample()))
    rows_js = (
        "[...document.querySelectorAll('#bias tbody tr')]"
        ".map(tr => [...tr.cells].map(td => td.innerText.trim()))"
    )
    with Browser(tmp_path / "profile") as browser:
        browser.open(page.as_uri(), width=420, height=900)
        loaded = "document.readyState === 'complete' && "
        rows = browser.wait_for(loaded + rows_js, timeout=30)  # navigation does not wait
        overflow = browser.evaluate(
            "document.querySelector('#bias').getBoundingClientRect().right"
            " <= document.documentElement.clientWidth"
        )
        browser.screenshot(tmp_path / "council.png", width=1280)
    by_check = {r[0]: r[1:] for r in rows}
    assert by_check["length vs raw mean, r"][2:] == ["4", "no evidence of a length preference"]
    assert by_check["harsh offset, points"] == [
        "-2.00",
        "[-2.43, -1.57]",
        "4",
        "harsh: scores below the others",
    ]
    assert by_check["lenient offset, points"][3] == "generous: scores above the others"
    assert overflow  # the section fits a phone's width
    assert (tmp_path / "council.png").stat().st_size > 10_000


def offset_reviewer(seed: int, name: str, offset: float) -> FunctionModel:
    """Scores each answer's quality plus noise plus ``offset`` points (harsh below 0)."""

    def reply(messages: list[Message], schema: type[BaseModel]) -> str:
        scores = {}
        for label, text in shown_candidates(messages):
            rng = random.Random(f"{seed}:{name}:{text}")
            quality = float(text.split()[-1])
            scores[label] = int(min(10, max(1, round(quality + offset + rng.gauss(0, 0.7)))))
        return review_reply(scores)

    return FunctionModel(reply, name=name)


def test_the_audit_finds_harsh_and_generous_reviewers_across_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `debate audit` checked council reviewers for position only."""
    store = RunStore(tmp_path / "s.sqlite")
    for seed in range(12):
        rng = random.Random(f"offsets:{seed}")
        answers = [
            Candidate(id=f"c{i}", text=f"answer {i} of quality {rng.uniform(4, 7):.2f}")
            for i in range(5)
        ]
        reviewers = {
            name: offset_reviewer(seed, name, k)
            for name, k in (("harsh", -1.5), ("fair", 0.0), ("kind", 1.5))
        }
        store.record_council(
            run_council_sync("Which answer?", answers, reviewers=reviewers, seed=seed)
        )
    found = {r.reviewer: r.offset for r in audit(store).council.reviewers}
    harsh, fair, kind = found["harsh"], found["fair"], found["kind"]
    assert harsh is not None and fair is not None and kind is not None
    assert harsh.n == 60 and harsh.runs == 12 and harsh.unit == "points"
    # planted: harsh is 1.5 below the others' mean (0 and +1.5), i.e. -2.25; kind +2.25
    assert (
        harsh.high is not None and harsh.high < 0 and harsh.value == pytest.approx(-2.25, abs=0.4)
    )
    assert kind.low is not None and kind.low > 0 and kind.value == pytest.approx(2.25, abs=0.4)
    assert fair.covers_zero
    assert main(["audit", "--store", str(tmp_path / "s.sqlite")]) == 0
    text = capsys.readouterr().out
    assert "harsh: scores below the others" in text and "generous: scores above" in text
    assert "no evidence of a harsh or generous reviewer" in text
