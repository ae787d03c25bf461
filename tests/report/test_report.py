"""The reports: every section present, model text escaped, self-contained, honest about gaps."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from debate import FunctionModel, RunConfig, judge_transcript_sync, write_result
from debate._cli.main import main
from debate.records import Argument, Closing, CrossExamination, DebateResult, Transcript
from debate.report import SECTION_IDS, render_html, render_markdown, write_report
from debate.report._markdown import text as md_text
from debate.storage import load_result
from tests.support.helpers import planted_judges

HOSTILE = "<script>alert(1)</script> {{ 7*7 }}"
PRO_STRONG = {"PRO-1": 9, "PRO-2": 8, "PRO-3": 7, "CON-1": 4, "CON-2": 3, "CON-3": 2}
MIRROR = {"PRO-1": 9, "PRO-2": 5, "PRO-3": 2, "CON-1": 9, "CON-2": 5, "CON-3": 2}


def hostile_transcript() -> Transcript:
    args = [
        Argument(id="PRO-1", claim=HOSTILE, reasoning="because <b>bold</b>", evidence="a & b"),
        Argument(id="PRO-2", claim="Faster releases", reasoning="small diffs", evidence="DORA"),
        Argument(id="PRO-3", claim="Fewer conflicts", reasoning="short branches", evidence="x"),
        Argument(id="CON-1", claim="Needs flags", reasoning="unfinished work", evidence="y"),
        Argument(id="CON-2", claim="Reviews suffer", reasoning="pressure", evidence="z"),
        Argument(id="CON-3", claim="CI must be fast", reasoning="green main", evidence="cost"),
    ]
    cross = [
        CrossExamination(
            round=1, by="CON", target="PRO-1", challenge=HOSTILE, concession="", rebuttal="no"
        )
    ]
    closings = [Closing(side="PRO", statement=HOSTILE), Closing(side="CON", statement="no")]
    return Transcript(
        topic=f"Should we adopt trunk-based development? {HOSTILE}",
        arguments=args,
        cross_examinations=cross,
        closings=closings,
    )


def judged(mode: str, calibration: str = "auto") -> DebateResult:
    """A scripted run; the risk judge always answers with hostile non-JSON (unscored)."""

    def plan(role: str, arg_id: str) -> int | str:
        if role == "risk" or (mode == "insufficient" and role != "general"):
            return "RAW:<script>alert(2)</script> not JSON"
        if mode == "split":
            return PRO_STRONG[arg_id] if role == "technical" else 11 - PRO_STRONG[arg_id]
        if mode == "too_close":
            return MIRROR[arg_id]
        return PRO_STRONG[arg_id] + (role == "business")

    config = RunConfig(model="function", calibration=calibration)  # type: ignore[arg-type]
    model = FunctionModel(planted_judges(plan))
    return judge_transcript_sync(hostile_transcript(), model=model, config=config, seed=3)


class Page(HTMLParser):
    """Collects what a test needs from an HTML page."""

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.feed(source)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def ids(self) -> list[str]:
        return [a["id"] for _, a in self.tags if "id" in a]

    def find(self, **wanted: str) -> list[tuple[str, dict[str, str]]]:
        def hit(attrs: dict[str, str]) -> bool:
            return all(attrs.get(k.rstrip("_").replace("_", "-")) == v for k, v in wanted.items())

        return [(t, a) for t, a in self.tags if hit(a)]

    @property
    def visible(self) -> str:
        return " ".join(self.text)


@pytest.fixture(scope="module")
def winner() -> DebateResult:
    result = judged("winner")
    assert result.decision.outcome == "winner"
    return result


def test_every_section_is_present_once(winner: DebateResult) -> None:
    page = Page(render_html(winner))
    ids = page.ids()
    for sid in SECTION_IDS:
        assert ids.count(sid) == 1, sid
    assert [t for t, _ in page.tags if t == "section"], "sections are <section> elements"
    transcript = [a for t, a in page.tags if t == "section" and a.get("id") == "transcript"]
    assert transcript and ("details", {}) in page.tags  # the transcript is collapsible


def test_hostile_text_is_escaped_and_no_script_exists(winner: DebateResult) -> None:
    html = render_html(winner)
    page = Page(html)
    assert not [t for t, _ in page.tags if t == "script"]
    assert "<script" not in html.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>alert(1)</script>" in page.visible  # shown as text
    assert "<script>alert(2)</script>" in page.visible  # the unscored judge's raw reply
    assert "{{ 7*7 }}" in page.visible  # not evaluated by any template engine
    assert "<b>bold</b>" in page.visible
    assert not [t for t, _ in page.tags if t in ("b", "i", "iframe", "img", "object")]


def test_html_is_self_contained(winner: DebateResult) -> None:
    html = render_html(winner)
    assert not re.search(r"https?://", html, re.IGNORECASE)
    page = Page(html)
    assert not [t for t, _ in page.tags if t in ("script", "link", "img", "iframe")]
    assert not [a for _, a in page.tags if "src" in a or "href" in a]
    assert "@import" not in html
    assert re.findall(r"url\(([^)]*)\)", html) == [
        u for u in re.findall(r"url\(([^)]*)\)", html) if u.startswith("#")
    ]


def test_unscored_judge_row_is_missing_not_zero(winner: DebateResult) -> None:
    page = Page(render_html(winner))
    rows = page.find(data_judge="risk", data_missing="true")
    assert len(rows) == 1 and "missing" in rows[0][1]["class"]
    risk_cells = [a for _, a in page.tags if "cell" in a.get("class", "").split()]
    risk_cells = [a for a in risk_cells if a.get("data-judge") == "risk"]
    assert risk_cells == []  # no number is drawn for it at all
    scored = [a for _, a in page.tags if a.get("data-judge") == "general" and "data-value" in a]
    assert len(scored) == 6 and all(a["data-value"] != "missing" for a in scored)
    assert "unscored: parse_failure" in page.visible
    standings = page.find(data_judge="risk", data_status="unscored")
    assert len(standings) == 1


def test_unscored_judge_is_missing_in_markdown(winner: DebateResult) -> None:
    md = render_markdown(winner)
    risk_rows = [line for line in md.splitlines() if line.startswith("| risk |")]
    assert risk_rows and all("unscored: parse_failure" in r for r in risk_rows)
    heat_row = risk_rows[0]
    assert "missing" in heat_row and not re.search(r"\d\.\d\d", heat_row)


def test_undefined_alpha_renders_as_undefined() -> None:
    result = judged("insufficient")
    assert result.decision.outcome == "insufficient"
    assert result.agreement.alpha is None and result.agreement.kappa is None
    page = Page(render_html(result))
    assert "alpha = undefined" in page.visible
    assert "kappa = undefined" in page.visible
    assert page.find(class_="undefined")
    assert not re.search(r"\b(nan|NaN|None|inf)\b", page.visible)
    md = render_markdown(result)
    assert "| alpha (calibrated scores) | undefined | undefined |" in md
    assert not re.search(r"\b(nan|NaN|None|inf)\b", md)


@pytest.mark.parametrize(
    ("mode", "calibration", "words"),
    [
        ("winner", "auto", "PRO wins"),
        ("too_close", "auto", "Too close to call"),
        ("split", "zscore", "the judges disagree"),
        ("insufficient", "auto", "too few judges could score"),
    ],
)
def test_verdict_in_plain_words(mode: str, calibration: str, words: str) -> None:
    result = judged(mode, calibration)
    expected = {"split": "irreconcilable"}.get(mode, mode)
    assert result.decision.outcome == expected
    page = Page(render_html(result))
    banner = page.find(id="verdict")
    assert banner and banner[0][1]["data-outcome"] == expected
    assert words in page.visible
    md = render_markdown(result)
    assert md.startswith(f"# {words[0].upper()}{words[1:]}") or words in md.splitlines()[0]
    for reason in result.decision.reasons:
        assert md_text(reason) in md
    assert md_text(result.decision.recommendation) in md


def test_markdown_escapes_model_text(winner: DebateResult) -> None:
    md = render_markdown(winner)
    assert "<script" not in md
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in md
    assert "{{ 7*7 }}" in md


def test_other_result_types_are_refused_clearly() -> None:
    with pytest.raises(TypeError, match="DebateResult"):
        render_html(object())
    with pytest.raises(TypeError, match="DebateResult"):
        render_markdown({"rankings": []})


def test_write_report_writes_both_files_atomically(winner: DebateResult, tmp_path: Path) -> None:
    md, html = write_report(winner, tmp_path / "out")
    assert (md.name, html.name) == ("report.md", "report.html")
    assert html.read_text(encoding="utf-8") == render_html(winner)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["report.html", "report.md"]


def test_debate_report_writes_the_reports(
    winner: DebateResult, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_result(winner, tmp_path / "run")
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [str(tmp_path / "run" / "report.md"), str(tmp_path / "run" / "report.html")]
    assert main(["report", str(path), "--out", str(tmp_path / "elsewhere")]) == 0
    assert (tmp_path / "elsewhere" / "report.html").exists()
    assert load_result(path) == winner


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    return lines[0]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ("{not json", "not valid JSON (line 1"),
        ("[1, 2]", "not a result"),
        (json.dumps({"topic": "x"}), "is this a result.json"),
        (json.dumps({"kind": "verdicts", "rankings": []}), "kind 'verdicts'"),
    ],
)
def test_debate_report_bad_input_exits_2(
    content: str | None, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "result.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert main(["report", str(path)]) == 2
    line = _error(capsys)
    assert message in line and str(path) in line
    assert not (tmp_path / "report.html").exists()


def test_debate_report_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report"]) == 2
    assert "debate report" in capsys.readouterr().err
    assert main(["report", str(tmp_path)]) == 2  # a folder, not a file
    assert "is a folder" in _error(capsys)


def test_debate_report_unwritable_out_is_bad_input(
    winner: DebateResult, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_result(winner, tmp_path / "run")
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    assert main(["report", str(path), "--out", str(blocker / "sub")]) == 2
    assert "--out" in _error(capsys)


def _data(result: DebateResult) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(result.model_dump_json())
    return data


def test_judge_without_weights_is_drawn_missing(winner: DebateResult) -> None:
    data = _data(winner)
    data["config"]["judges"] = [j for j in data["config"]["judges"] if j["name"] != "general"]
    page = Page(render_html(DebateResult.model_validate(data)))
    assert page.find(data_judge="general", data_missing="true")
    assert "no rubric weights" in page.visible


def test_standing_moved_by_the_swap_is_shown() -> None:
    def plan(role: str, arg_id: str) -> int | str:
        return PRO_STRONG[arg_id]

    config = RunConfig(model="function", swap=True)
    result = judge_transcript_sync(
        hostile_transcript(), model=FunctionModel(planted_judges(plan)), config=config, seed=3
    )
    data = _data(result)
    swap = data["evaluations"][0]["swap"]
    assert swap is not None and swap["scores"]["PRO-1"]["standing"] == "UPHELD"
    swap["scores"]["PRO-1"]["standing"] = "REFUTED"
    swap["position_sensitive"] = ["PRO-1"]
    page = Page(render_html(DebateResult.model_validate(data)))
    # Short words in the cell (so six arguments fit 1280 px), the standings in its title.
    assert "upheld → refuted" in page.visible
    assert page.find(title="UPHELD → REFUTED")
    assert "changed when the sides were swapped" in page.visible


def test_charts_are_inline_svg_without_references(winner: DebateResult) -> None:
    from debate.report import charts

    figures = charts(winner)
    assert set(figures) == {"points", "margin", "alpha", "kappa", "heatmap", "dimensions"}
    for name, markup in figures.items():
        assert markup.startswith("<svg") and markup.endswith("</svg>"), name
        assert "http" not in markup and "<script" not in markup, name


# --- Issue 15: verdicts that never claim more than the panel showed (the report's part) ---


def _with(result: DebateResult, edit: Callable[[dict[str, Any]], None]) -> DebateResult:
    data = _data(result)
    edit(data)
    return DebateResult.model_validate(data)


def _kappa(value: float) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        data["agreement"]["kappa"] = value

    return edit


def test_kappa_is_read_on_kappa_bands_against_its_own_gate(winner: DebateResult) -> None:
    from debate.report import charts

    assert winner.decision.thresholds.kappa == 0.4
    passing = charts(_with(winner, _kappa(0.45)))["kappa"]
    value = Page(passing).find(class_="value pass")
    assert value, "0.45 meets the 0.40 gate and must not be drawn as failing"
    assert "kappa = 0.450 · moderate · meets the gate 0.40" in Page(passing).visible
    assert 'class="value fail"' not in passing
    assert "band-substantial" in passing and "band-unacceptable" not in passing
    failing = charts(_with(winner, _kappa(0.35)))["kappa"]
    assert Page(failing).find(class_="value fail") and "· fair ·" in failing
    page = Page(render_html(_with(winner, _kappa(0.707))))
    assert "0.707 · substantial" in page.visible
    assert "moderate" not in " ".join(t for t in page.text if "0.707" in t)
    assert "(substantial)" in render_markdown(_with(winner, _kappa(0.707)))


def _points(data: dict[str, Any]) -> None:
    data["vote"] |= {
        "pro_points": 7.6667,
        "con_points": 4.25,
        "margin_points": 3.4167,
        "margin_points_ci": [2.5, 4.0],
    }


def test_per_side_means_in_points_sit_beside_the_calibrated_margin(winner: DebateResult) -> None:
    result = _with(winner, _points)
    page = Page(render_html(result))
    for shown in ("7.67 points", "4.25 points", "+3.42 points", "+2.50 to +4.00"):
        assert shown in page.visible, shown
    assert "calibrated margin" in page.visible.lower()
    assert "Mean score in points (1-10): PRO 7.7, CON 4.2" in render_html(result)
    md = render_markdown(result)
    assert "PRO 7.67 points · CON 4.25 points · PRO − CON +3.42 points" in md
    assert "| points (1–10) | 7.67 | 4.25 | +3.42 | +2.50 to +4.00 |" in md

    def written_before_points(data: dict[str, Any]) -> None:
        for key in ("pro_points", "con_points", "margin_points", "margin_points_ci"):
            data["vote"][key] = None

    # A record without points says so, never a number.
    unknown = Page(render_html(_with(winner, written_before_points)))
    assert "no per-side means in points" in unknown.visible


def test_the_shares_add_up_to_the_margin_the_vote_computed() -> None:
    """With judges whose spread is below the floor, the report calibrates as the vote did."""
    from debate.report._why import pulls

    narrow = {"PRO-1": 6, "PRO-2": 6, "PRO-3": 6, "CON-1": 5, "CON-2": 5, "CON-3": 5}

    def plan(role: str, arg_id: str) -> int:
        return narrow[arg_id] + (role == "business") - (arg_id == "PRO-1" and role == "risk")

    config = RunConfig(model="function", calibration="minmax")
    result = judge_transcript_sync(
        hostile_transcript(), model=FunctionModel(planted_judges(plan)), config=config, seed=3
    )
    assert result.decision.thresholds.min_spread is not None and result.vote.margin is not None
    assert sum(p.pull for p in pulls(result)) == pytest.approx(result.vote.margin, abs=1e-9)


def test_why_names_the_deciding_arguments_and_quotes_the_judges(winner: DebateResult) -> None:
    from debate.report._why import deciding, pulls

    shares = pulls(winner)
    assert winner.vote.margin is not None
    # The shares decompose the margin exactly, so "deciding" means what it says.
    assert sum(p.pull for p in shares) == pytest.approx(winner.vote.margin, abs=1e-9)
    top = deciding(winner)
    assert top and all(p.pull > 0 for p in top)  # every one pulls toward the winner, PRO
    assert {"PRO-1", "CON-3"} <= {p.argument for p in top}  # PRO's best, CON's worst
    page = Page(render_html(winner))
    named = [a["data-arg"] for t, a in page.tags if t == "li" and "data-arg" in a]
    assert named == [p.argument for p in top]
    quoted = {a["data-judge"] for t, a in page.tags if t == "blockquote"}
    assert quoted == {"technical", "business", "general"}  # risk is unscored: no finding
    assert "technical done" in page.visible
    md = render_markdown(winner)
    assert f"1. **{top[0].argument}**" in md and "> “technical done” (**technical**)" in md


def test_findings_and_claims_in_why_stay_escaped(winner: DebateResult) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["evaluations"][0]["key_finding"] = HOSTILE

    result = _with(winner, edit)
    html = render_html(result)
    assert "<script" not in html.lower() and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    page = Page(html)
    quotes = [t for t in page.text if HOSTILE in t]
    assert quotes, "the hostile finding and claim are shown as text"
    assert "<script" not in render_markdown(result)


def _diagnostics(data: dict[str, Any]) -> None:
    data["decision"]["diagnostics"] = {
        "alpha_without_judge": {"technical": -0.2, "business": 0.85, "general": -0.1},
        "alpha_by_dimension": {"logic": 0.4, "evidence": -0.3, "honesty": 0.1},
        "argument_variance": {"PRO-1": 9.0, "CON-2": 1.0},
    }


def test_a_split_names_its_judge_dimension_and_arguments() -> None:
    split = judged("split", "zscore")
    assert split.decision.outcome == "irreconcilable"
    page = Page(render_html(_with(split, _diagnostics)))
    causes = " ".join(page.text)
    assert "Without business, alpha would be 0.850" in causes
    assert "The judges agree least on evidence (alpha -0.300)" in causes
    assert "They split on PRO-1 (variance 9.0)" in causes and "CON-2 (variance" not in causes
    assert "Where the split comes from" in render_markdown(_with(split, _diagnostics))


def test_no_cause_is_named_that_the_data_does_not_show(winner: DebateResult) -> None:
    assert "Where the split comes from" not in Page(render_html(winner)).visible
    split = judged("split", "zscore")

    def lowering(data: dict[str, Any]) -> None:
        # Removing any judge lowers agreement: no judge is "the one the others disagree with".
        alpha = data["agreement"]["alpha"]
        data["decision"]["diagnostics"] = {"alpha_without_judge": {"technical": alpha - 0.1}}

    visible = Page(render_html(_with(split, lowering))).visible
    assert "Without technical" not in visible and "agree least on" not in visible

    def even(data: dict[str, Any]) -> None:
        data["decision"]["diagnostics"] = {"alpha_by_dimension": dict.fromkeys(DIMS, -0.08)}

    visible = Page(render_html(_with(split, even))).visible
    assert "agree least on" not in visible  # no dimension is singled out among equals
    assert "Every rubric dimension has the same alpha (-0.080)" in visible


DIMS = ("logic", "evidence", "responsiveness", "honesty")


def _css() -> str:
    from debate.report import CSS

    return CSS


def test_no_fixed_width_is_wider_than_a_1280_px_page() -> None:
    widths = [int(w) for w in re.findall(r"width\s*:\s*(\d+)px", _css())]
    assert widths and max(widths) <= 1280
    standings = re.findall(r"table\.standings[^{]*\{([^}]*)\}", _css())
    assert standings and not any(re.search(r"min-width:\s*[1-9]\d*px", r) for r in standings)
    assert "@media (max-width:600px)" in _css()  # a phone gets its own layout


def test_charts_keep_readable_text_at_any_width(winner: DebateResult) -> None:
    from debate.report import charts

    for name, markup in charts(winner).items():
        if name == "heatmap":  # drawn at its natural size, scrolling inside its own box
            assert "max-width:none" in _css().replace(" ", "")
            continue
        # No viewBox: the chart is as wide as its box and its text is never scaled down.
        assert "viewBox" not in markup and 'width="100%"' in markup, name
        sizes = [int(s) for s in re.findall(r'font-size="(\d+)"', markup)]
        assert sizes and min(sizes) >= 11, name


def test_council_card_is_coloured_by_outcome_and_its_chart_has_an_axis() -> None:
    from debate.report._council import ranking_svg, render_council_html
    from tests.support.render_samples import council

    result = council()
    page = Page(render_council_html(result))
    card = page.find(id="verdict")
    assert card and card[0][1]["data-outcome"] == "winner"
    assert "outcome-winner" in card[0][1]["class"].split()
    chart = Page(ranking_svg(result))
    ticks = chart.find(class_="tick")
    labels = [a for t, a in chart.tags if a.get("class") == "tick-label"]
    assert len(ticks) >= 3 and len(labels) == len(ticks)
    assert "mean z-score across reviewers" in chart.visible and "0" in chart.text
    last = result.rankings[-1]
    assert last.first_places == 0 and last.confidence == "high"
    assert "confidence" not in page.visible  # its coverage is shown as coverage
    assert "vote coverage" in page.visible

    data = json.loads(result.model_dump_json())
    data["rankings"][0]["tied_with_next"] = True
    tied = Page(render_council_html(type(result).model_validate(data))).find(id="verdict")
    assert tied[0][1]["data-outcome"] == "tied" and "outcome-tied" in tied[0][1]["class"]


def test_the_sample_reports_render_in_one_command(tmp_path: Path) -> None:
    from tests.support.render_samples import main as render_samples

    assert render_samples([str(tmp_path)]) == 0
    outcomes = {
        name: re.search(r'data-outcome="(\w+)"', (tmp_path / name / "report.html").read_text())
        for name in ("report", "report-split", "council")
    }
    assert {k: m.group(1) if m else None for k, m in outcomes.items()} == {
        "report": "winner",
        "report-split": "irreconcilable",
        "council": "winner",
    }


def test_both_reports_read_one_worked_out_view(
    winner: DebateResult, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from debate.report import _view, _why

    rows: list[str] = []
    panels: list[str] = []
    heat_row, panel = _view._heat_row, _why._panel
    monkeypatch.setattr(
        _view, "_heat_row", lambda r, e, w: rows.append(e.judge) or heat_row(r, e, w)
    )
    monkeypatch.setattr(_why, "_panel", lambda r: panels.append(r.topic) or panel(r))
    result = winner.model_copy()  # a new object: nothing worked out for it yet
    write_report(result, tmp_path)
    # the heatmap (read by both formats, and twice by the page) and the arguments' pulls
    # (the deciding arguments, in both formats) were each worked out once
    assert sorted(rows) == sorted(e.judge for e in result.evaluations)
    assert len(panels) == 1
    assert _view.heatmap(result) == _view.heatmap.__wrapped__(result)
    assert (tmp_path / "report.html").read_text() == render_html(winner)
    assert (tmp_path / "report.md").read_text() == render_markdown(winner)
