"""Council mode end to end with function models: planted quality, harsh and lenient reviewers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from debate import FunctionModel, RunConfig
from debate._cli.main import main
from debate.council import load_candidates, run_council_sync
from debate.exceptions import ConfigurationError
from debate.models import Message
from debate.records import Candidate, CouncilResult
from tests.support.helpers import review_reply, shown_candidates

QUALITY = {"alpha answer": 8.0, "beta answer": 6.0, "gamma answer": 4.0}
CANDIDATES = [
    Candidate(id="A", text="alpha answer"),
    Candidate(id="B", text="beta answer"),
    Candidate(id="C", text="gamma answer", author_model="self-reviewer"),
]


def reviewer(score_of):  # type: ignore[no-untyped-def]
    def reply(messages: list[Message], schema: type[BaseModel]) -> str:
        return review_reply(
            {label: score_of(QUALITY[text]) for label, text in shown_candidates(messages)}
        )

    return reply


def clamp(x: float) -> int:
    return int(max(1, min(10, round(x))))


REVIEWERS = {
    "harsh": FunctionModel(reviewer(lambda q: clamp(6 + (q - 6) * 0.5)), name="harsh"),
    "lenient": FunctionModel(reviewer(lambda q: clamp(8 + (q - 6) * 0.5)), name="lenient"),
    "binary": FunctionModel(reviewer(lambda q: 9 if q >= 7 else 3), name="binary"),
    # wrote C and loves it; hates the others
    "self": FunctionModel(reviewer(lambda q: 10 if q == 4.0 else 2), name="self-reviewer"),
}


def council(**kwargs: object) -> CouncilResult:
    return run_council_sync(
        "What is the capital of France?", CANDIDATES, reviewers=REVIEWERS, seed=5, **kwargs
    )


def test_normalized_averaging_recovers_planted_order_and_excludes_self_vote() -> None:
    result = council()
    assert [e.candidate for e in result.rankings] == ["A", "B", "C"]
    self_review = next(r for r in result.reviews if r.reviewer == "self")
    assert self_review.self_votes_excluded == ["C"]
    by = {e.candidate: e for e in result.rankings}
    # C's votes come from the three other reviewers only
    assert by["C"].votes == 3 and by["A"].votes == 4
    assert by["A"].raw_mean is not None and by["C"].raw_mean is not None
    assert by["A"].raw_mean > by["C"].raw_mean  # raw means are reported beside
    assert result.method == "normalized"
    assert result.interpretation.startswith("A is the clear winner") or "tied" in (
        result.interpretation
    )
    for review in result.reviews:
        assert set(review.positions) == {"A", "B", "C"}
        assert sorted(review.labels) == ["A", "B", "C"]
    # reviewers saw different orders
    assert len({tuple(sorted(r.positions, key=r.positions.get)) for r in result.reviews}) > 1  # type: ignore[arg-type]


def test_self_vote_would_have_changed_the_raw_order() -> None:
    """Without exclusion the self-reviewer's 10 for C and 2 for the others would count."""
    result = council()
    self_review = next(r for r in result.reviews if r.reviewer == "self")
    assert self_review.overall is not None and self_review.overall["C"] == 10.0
    c = next(e for e in result.rankings if e.candidate == "C")
    assert c.raw_mean is not None and c.raw_mean < 6  # the 10 is not in it


def test_methods_are_selectable_and_all_reported() -> None:
    borda = council(config=RunConfig(model="f", council={"method": "borda"}))
    assert borda.method == "borda"
    assert [e.candidate for e in borda.rankings] == ["A", "B", "C"]
    raw = council(config=RunConfig(model="f", council={"method": "rubric"}))
    assert raw.method == "rubric"
    means = [e.raw_mean for e in raw.rankings]
    assert means == sorted(means, reverse=True)  # type: ignore[type-var]
    # Raw averaging lets the harsh self-reviewer's 2 for B drag B below C: the planted
    # order is lost, which is why normalised averaging is the default.
    assert [e.candidate for e in raw.rankings] == ["A", "C", "B"]


def test_candidates_file_errors_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "a", "text": "x"}\n{"id": "b"}\n')
    with pytest.raises(ConfigurationError, match="line 2.*text"):
        load_candidates(path)
    path.write_text('{"id": "a", "text": "x"}\nnot json\n')
    with pytest.raises(ConfigurationError, match="line 2: not valid JSON"):
        load_candidates(path)


def test_council_cli_with_generated_candidates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "council",
            "Which database should we use?",
            "--generate",
            "scripted-a,scripted-b,scripted-c",
            "--out",
            str(tmp_path),
            "--quiet",
            # seeded: for about 4 % of seeds the placeholder's reviews all fail the schema,
            # and the leaderboard (rightly) records no council with fewer than 2 reviewers
            "--seed",
            "0",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    result = CouncilResult.model_validate_json((tmp_path / "result.json").read_text())
    assert {c.id for c in result.candidates} == {"scripted-a", "scripted-b", "scripted-c"}
    assert all(r.self_votes_excluded == [r.model] for r in result.reviews)
    assert "Council ranking" in out and "Self-vote excluded" in out
    page = (tmp_path / "report.html").read_text()
    assert 'id="ranking"' in page and "<svg" in page and "http" not in page
    code = main(["leaderboard"])
    out, _ = capsys.readouterr()
    assert code == 0 and "scripted-a" in out


def test_council_cli_refuses_one_candidate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "a", "text": "x"}\n')
    code = main(
        [
            "council",
            "Q?",
            "--candidates",
            str(path),
            "--model",
            "scripted",
            "--out",
            str(tmp_path / "out"),
        ]
    )
    _, err = capsys.readouterr()
    assert code == 2 and "at least two" in err


# Positions are in percent of the chart's width (the chart fills its box at any width).
BAR = re.compile(
    r'<line x1="([\d.]+)%" y1="([\d.]+)" x2="([\d.]+)%" y2="\2" [^>]*stroke-width="2"/>'
)
BRACKET = re.compile(r'<path d="M[\d.]+,([\d.]+) ')


@pytest.mark.parametrize("tie_z", [0.3, 1.96, 6.0])
def test_report_bars_are_the_intervals_the_tie_rule_uses(tie_z: float) -> None:
    """A bracket joins two candidates exactly where their drawn bars overlap, at any tie_z."""
    from debate.report._council import ranking_svg, render_council_html

    result = council(config=RunConfig(model="f", council={"tie_z": tie_z}))
    drawn = ranking_svg(result)
    bars = [(float(a), float(b)) for a, _, b in BAR.findall(drawn)]
    assert len(bars) == len(result.rankings) == 3
    bracketed = {round((float(y) - 25) / 34) for y in BRACKET.findall(drawn)}
    overlapping = {i for i in range(len(bars) - 1) if min(bars[i]) < max(bars[i + 1])}
    assert bracketed == overlapping
    assert bracketed == {i for i, e in enumerate(result.rankings) if e.tied_with_next}
    coverage = {0.3: "24%", 1.96: "95%", 6.0: "100%"}[tie_z]
    assert f"bars are {coverage} intervals" in render_council_html(result)


def test_the_first_two_candidates_carry_p_agree_from_each_reviewers_margin() -> None:
    result = council()
    pair = result.top_pair
    assert pair is not None and (pair.first, pair.second) == ("A", "B")
    # Each reviewer's overall margin of A over B, a whole vote from 3 points, summed; the
    # uncalibrated p_agree is its sigmoid.
    by = {r.reviewer: r.overall for r in result.reviews if r.overall is not None}
    margins = [o["A"] - o["B"] for o in by.values()]
    expected = sum(max(-1.0, min(1.0, m / 3)) for m in margins)
    assert pair.evidence == pytest.approx(expected)
    assert pair.lead == "A" and pair.reviewers == 4
    assert pair.p_agree == pytest.approx(1 / (1 + 2.718281828459045 ** (-expected)))
    assert pair.p_agree_calibrated is False
