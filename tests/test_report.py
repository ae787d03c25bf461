"""The reports: every section present, model text escaped, self-contained, honest about gaps."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from debate import FunctionModel, RunConfig, judge_transcript_sync, write_result
from debate._cli.main import main
from debate.records._result import DebateResult
from debate.records._transcript import Argument, Closing, CrossExamination, Transcript
from debate.report import SECTION_IDS, render_html, render_markdown, write_report
from debate.report._markdown import text as md_text
from debate.storage._files import load_result
from tests.helpers import planted_judges

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
    assert "UPHELD → REFUTED" in page.visible
    assert "changed when the sides were swapped" in page.visible


def test_charts_are_inline_svg_without_references(winner: DebateResult) -> None:
    from debate.report import charts

    figures = charts(winner)
    assert set(figures) == {"margin", "alpha", "kappa", "heatmap", "dimensions"}
    for name, markup in figures.items():
        assert markup.startswith("<svg") and markup.endswith("</svg>"), name
        assert "http" not in markup and "<script" not in markup, name
