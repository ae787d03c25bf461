"""The validity report's page, Markdown, tidy CSV and DataFrame."""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from debate._cli.main import main
from debate.exceptions import ConfigurationError
from debate.judgments import (
    planted_pairs,
    render_validity_html,
    render_validity_markdown,
    table_rows,
    validate_judgments,
    write_judgments,
)
from debate.judgments._frame_table import CSV_COLUMNS, frame_dataframe, frame_rows, write_frame_csv
from debate.judgments._metrics import validity_report
from debate.judgments._report import SUMMARY_HEAD, render_validity_summary
from debate.records import (
    NO_CALL,
    Calls,
    DecisionFrame,
    OptionScores,
    Policy,
    TierPolicy,
    ValidityReport,
)
from debate.report import render_html, risk_coverage_svg
from debate.report._risk_plot import PLOT_LEFT, PLOT_RIGHT
from debate.stats import Platt

JUDGES = ("judge-a", "<b>judge</b> & co", "judge-c")


def planted_frame(n_items: int = 120, seed: int = 4, scores: bool = True) -> DecisionFrame:
    """Judges of rising accuracy; gated panels declare where the vote is clear."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, n_items).astype(np.int8)
    label = truth.copy()
    label[:7] = NO_CALL
    judges, votes = {}, []
    for accuracy, name in zip((0.6, 0.7, 0.8), JUDGES, strict=True):
        right = rng.random(n_items) < accuracy
        call = np.where(right, truth, 1 - truth).astype(np.int8)
        call[rng.random(n_items) < 0.05] = NO_CALL  # unscored now and then
        judges[name] = Calls(
            call=call, declared=call != NO_CALL, confidence=rng.random(n_items) + right
        )
        votes.append(np.select([call == 0, call == 1], [1.0, -1.0], 0.0))
    margin = np.mean(votes, axis=0)
    majority = np.select([margin > 0, margin < 0], [0, 1], 2).astype(np.int8)
    outcome = np.where(np.abs(margin) > 0.5, 0, np.where(rng.random(n_items) < 0.5, 1, 2))
    lead = np.where(majority == 2, NO_CALL, majority).astype(np.int8)
    p_agree = np.where(lead == NO_CALL, 0.0, 0.5 + np.abs(margin) / 2.5 + rng.random(n_items) / 10)
    gated = Calls(
        call=majority,
        declared=outcome == 0,
        confidence=np.abs(margin),
        outcome=outcome.astype(np.int8),
        lead=lead,
        p_agree=p_agree,
        calibrated=True,
    )
    # The same gate with an uncalibrated score: the report must call it that.
    equal = Calls(
        call=majority,
        declared=outcome == 0,
        confidence=np.abs(margin),
        outcome=outcome.astype(np.int8),
        lead=lead,
        p_agree=np.where(lead == NO_CALL, 0.0, 0.5 + np.abs(margin) / 2),
        calibrated=False,
    )
    option_scores = None
    if scores:
        group = np.repeat(np.arange(n_items, dtype=np.int32), 2)
        people = rng.normal(5, 2, group.size)
        option_scores = OptionScores(
            group=group,
            people=people,
            methods={"majority": people + rng.normal(0, 1, group.size)},
            judges={j: people + rng.normal(0, 2, group.size) for j in JUDGES},
        )
    return DecisionFrame(
        items=tuple(f"story-{i}" for i in range(n_items)),
        group=np.arange(n_items, dtype=np.int32),
        fold=(np.arange(n_items) % 5).astype(np.int32),
        label=label,
        people_split=rng.random(n_items) < 0.3,
        methods={
            "majority": Calls(call=majority, declared=majority != 2, confidence=np.abs(margin)),
            "labels": gated,
            "equal": equal,
        },
        judges=judges,
        option_scores=option_scores,
        weights_by_fold={"labels": [{j: 1.0 + i / 10 for j in JUDGES} for i in range(5)]},
        options=tuple((f"story-{i}/a", f"story-{i}/b") for i in range(n_items)),
    )


def planted_report(
    frame: DecisionFrame | None = None, policy: Policy | None = None
) -> ValidityReport:
    return validity_report(
        frame or planted_frame(),
        policy=policy,
        alpha_judges=0.41,
        alpha_people=0.23,
        alpha_level="interval",
        n_boot=200,
        seed=0,
        source="planted <judgments>.csv",
        folds=5,
    )


def test_page_holds_the_plot_every_method_and_no_url() -> None:
    report = planted_report()
    page = render_validity_html(report)
    assert page.startswith("<!DOCTYPE html>") and page.endswith("</html>\n")
    assert render_html(report) == page  # the shared entry point dispatches to it
    plot = re.search(r'<svg class="chart risk-coverage".*?</svg>', page, re.S)
    assert plot is not None
    curves = re.findall(r'<polyline class="curve" data-method="([^"]*)" data-kind="(\w+)"', page)
    assert ("labels", "panel") in curves and (report.best_judge, "judge") in curves
    assert 'class="marker" data-method="labels"' in plot.group(0)  # the panel's own coverage
    for row in report.methods:
        assert f"<td>{row.name}</td>" in page.replace("&lt;", "<").replace("&gt;", ">").replace(
            "&amp;", "&"
        )
    assert "<b>judge</b>" not in page and "&lt;b&gt;judge&lt;/b&gt; &amp; co" in page
    assert "planted &lt;judgments&gt;.csv" in page
    for section in ("methods", "risk-coverage", "splits", "agreement", "weights", "notes"):
        assert f'<section id="{section}">' in page
    assert "alpha among people" in page and "0.230" in page
    assert "http" not in page and "<script" not in page


def test_markdown_tables_have_one_row_per_method_and_a_cell_per_column() -> None:
    report = planted_report()
    text = render_validity_markdown(report)
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| method |"))
    head = lines[start]
    assert head.count("|") - 1 == 9  # six columns, three more for scores
    body = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        body.append(line)
    assert len(body) == len(report.methods)
    cells = [len(re.findall(r"(?<!\\)\|", line)) - 1 for line in body]
    assert set(cells) == {9}
    assert "| gated panel | basis | coverage |" in text and "| most confident |" in text
    assert "\\<b\\>" not in text and "&lt;b&gt;judge&lt;/b&gt; &amp; co" in text


def test_csv_rows_round_trip_the_counts(tmp_path: Path) -> None:
    frame = planted_frame(scores=False)
    path = tmp_path / "out" / "rows.csv"
    written = write_frame_csv(path, frame)
    methods = len(frame.methods) + len(frame.judges)
    assert written == frame.group.size * methods
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert tuple(rows[0]) == CSV_COLUMNS and len(rows) == written
    for name, calls in {**frame.methods, **frame.judges}.items():
        mine = [r for r in rows if r["method"] == name]
        labelled = (frame.label != NO_CALL) & (calls.call != NO_CALL)
        right = int((labelled & (calls.call == frame.label)).sum())
        assert sum(r["correct"] == "True" for r in mine) == right
        assert sum(r["correct"] == "" for r in mine) == int((~labelled).sum())
        assert sum(r["declared"] == "True" for r in mine) == int(calls.declared.sum())
    assert rows[0]["option_a"] == "story-0/a" and rows[0]["label"] == ""  # no majority
    assert {r["outcome"] for r in rows if r["method"] == "labels"} <= {
        "winner",
        "too_close",
        "irreconcilable",
    }
    assert {r["outcome"] for r in rows if r["kind"] == "judge"} == {""}
    assert len(list(frame_rows(frame))) == written
    assert not list(tmp_path.glob("out/.*"))  # no temporary file left behind


def test_dataframe_matches_the_csv(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    frame = planted_frame(n_items=30, scores=False)
    df = frame_dataframe(frame)
    assert list(df.columns) == list(CSV_COLUMNS)
    expected = pd.DataFrame(list(frame_rows(frame)), columns=list(CSV_COLUMNS))
    assert len(df) == len(expected)
    for column in ("item", "option_a", "method", "kind", "label", "call", "outcome"):
        assert df[column].tolist() == expected[column].tolist(), column
    assert df["correct"].isna().sum() == expected["correct"].isna().sum()
    assert df["correct"].sum() == expected["correct"].dropna().astype(bool).sum()
    assert np.allclose(df["confidence"].to_numpy(float), expected["confidence"].to_numpy(float))


def test_dataframe_without_pandas_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas raises ImportError
    with pytest.raises(ConfigurationError) as info:
        frame_dataframe(planted_frame(n_items=5, scores=False))
    message = str(info.value)
    assert 'pip install -e ".[pandas]"' in message and "\n" not in message


# --- the plot, the reliability diagrams, the guarantee box, the comparisons -----------------


Curve = tuple[str, list[tuple[float, ...]], str]


def _polylines(svg: str) -> dict[str, Curve]:
    """Each curve's (kind, points, attributes) by its (unescaped) method name."""
    out: dict[str, Curve] = {}
    for m in re.finditer(r"<polyline class=\"curve\" ([^>]*)>", svg):
        attrs = m.group(1)
        name = re.search(r'data-method="([^"]*)"', attrs)
        kind = re.search(r'data-kind="(\w+)"', attrs)
        points = re.search(r'points="([^"]*)"', attrs)
        assert name and kind and points
        xy = [tuple(float(v) for v in p.split(",")) for p in points.group(1).split()]
        key = name.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
        out[key] = (kind.group(1), xy, attrs)
    return out


def _legend_texts(svg: str) -> list[str]:
    return re.findall(r"<text [^>]*>([^<]*)</text>", svg)


def test_plot_has_every_judge_and_names_only_the_panels_and_the_best_judge() -> None:
    report = planted_report()
    svg = risk_coverage_svg(report)
    curves = _polylines(svg)
    assert {n for n, (kind, _, _) in curves.items() if kind == "judge"} == set(JUDGES)
    assert {n for n, (kind, _, _) in curves.items() if kind == "panel"} == {"labels", "equal"}
    best = report.best_judge
    assert best is not None and 'data-best="true"' in curves[best][2]
    assert sum('data-best="true"' in attrs for _, _, attrs in curves.values()) == 1
    # The panels run to 100 % of labelled units: the last point is at the right edge.
    for name in ("labels", "equal"):
        assert curves[name][1][-1][0] == pytest.approx(PLOT_RIGHT)
    # Panels bold and coloured, other judges thin grey.
    assert 'stroke-width="3"' in curves["labels"][2] and "#0072b2" in curves["labels"][2]
    others = [n for n in JUDGES if n != best]
    assert all('stroke-width="1.1"' in curves[n][2] for n in others)
    # The legend names the panels and the best judge; other judges are counted, not named.
    texts = _legend_texts(svg)
    assert "labels" in texts and "equal" in texts and best in texts
    assert "2 other judges" in texts
    assert not any(n in texts or "&lt;b&gt;judge" in t for n in others for t in texts)
    # Drawing order: grey judges under the best judge, panels on top.
    order = list(curves)
    assert order.index(best) > max(order.index(n) for n in others)
    assert order.index("labels") == len(order) - 1


def test_plot_stays_legible_with_twenty_judges_and_with_two() -> None:
    for count in (20, 2):
        names = {f"judge-{k:02d}": 0.6 + 0.3 * k / count for k in range(count)}
        judges, people, _ = planted_pairs(300, names, probabilities=True, seed=5)
        report = validate_judgments(judges, people, n_boot=20, seed=0).report
        svg = risk_coverage_svg(report)
        curves = _polylines(svg)
        assert sum(kind == "judge" for kind, _, _ in curves.values()) == count
        texts = _legend_texts(svg)
        others = count - 1
        assert f"{others} other judge{'s' if others > 1 else ''}" in texts
        named = [t for t in texts if t.startswith("judge-")]
        assert named == [report.best_judge]  # only the best judge is named
        # Legend rows do not grow with the judges: the chart keeps its height.
        assert 'height="400"' in svg


def test_a_judge_without_gradation_is_a_flat_line_from_zero() -> None:
    frame = planted_frame()
    flat = frame.judges["judge-c"]
    frame.judges["judge-c"] = Calls(
        call=flat.call, declared=flat.declared, confidence=np.ones(flat.call.size)
    )
    curves = _polylines(risk_coverage_svg(planted_report(frame)))
    _, points, _ = curves["judge-c"]
    assert len(points) == 2 and points[0][0] == pytest.approx(PLOT_LEFT)
    assert points[0][1] == pytest.approx(points[1][1])


def test_reliability_diagram_per_panel_with_counts_ece_and_the_diagonal() -> None:
    report = planted_report()
    page = render_validity_html(report)
    section = re.search(r'<section id="reliability">.*?</section>', page, re.S)
    assert section is not None
    body = section.group(0)
    for cal in report.calibration:
        figure = re.search(
            rf'<figure class="reliability" data-method="{cal.method}">(.*?)</figure>', body, re.S
        )
        assert figure is not None, cal.method
        filled = [b for b in cal.bins if b.n]
        dots = re.findall(r'<circle class="bin" data-n="(\d+)"', figure.group(1))
        bars = re.findall(r'<rect class="bin-count" data-n="(\d+)"', figure.group(1))
        assert [int(n) for n in dots] == [b.n for b in filled] == [int(n) for n in bars]
        assert 'class="diagonal"' in figure.group(1)
        assert f"ECE {cal.ece.text()}" in figure.group(1)
        uncalibrated = "uncalibrated score" in figure.group(1)
        assert uncalibrated == (not cal.calibrated), cal.method
    assert {c.method: c.calibrated for c in report.calibration} == {
        "labels": True,
        "equal": False,
    }
    text = render_validity_markdown(report)
    assert "Reliability: per bin of p_agree" in text and "uncalibrated score" in text
    labels = next(c for c in report.calibration if c.method == "labels")
    assert f"- labels: ECE {labels.ece.text()}" in text


def _policy(source: str = "planted <judgments>.csv") -> Policy:
    platt = Platt(slope=1.2, intercept=0.1, n=113)
    return Policy(
        kind="scores",
        target_agreement=0.8,
        risk=0.1,
        tiers=[
            TierPolicy(
                tier=1,
                judges=["judge-a", "<b>judge</b> & co"],
                weights={"judge-a": 0.9, "<b>judge</b> & co": 0.0},
                calibrator=platt,
                threshold=0.71,
                declared=60,
                coverage=0.5,
                agreement=0.85,
                labelled=120,
            ),
            TierPolicy(
                tier=2,
                judges=["judge-a", "<b>judge</b> & co", "judge-c"],
                weights={"judge-a": 0.9, "<b>judge</b> & co": 0.0, "judge-c": 1.4},
                calibrator=platt,
                threshold=0.9,
                declared=30,
                coverage=0.25,
                agreement=0.9,
                labelled=60,
            ),
        ],
        labelled_units=120,
        calibration_items=110,
        coverage=0.75,
        agreement=0.8667,
        guarantee="on new items <like these>, agreement is at least 0.8 with probability 0.9",
        condition="new items are exchangeable with the calibration items & judged alike",
        source=source,
        seed=0,
        folds=5,
    )


def test_guarantee_box_only_with_a_policy_and_everything_in_it_escaped() -> None:
    assert 'id="guarantee"' not in render_validity_html(planted_report())
    assert "Guarantee" not in render_validity_markdown(planted_report())
    report = planted_report(policy=_policy())
    page = render_validity_html(report)
    box = re.search(r'<section id="guarantee"[^>]*>.*?</section>', page, re.S)
    assert box is not None
    html = box.group(0)
    assert page.index('id="guarantee"') < page.index('id="methods"')  # first, after summary
    assert "Agreement with people at least 80%, with probability at least 90%" in html
    assert "On new items &lt;like these&gt;, agreement is at least 0.8" in html
    assert "exchangeable with the calibration items &amp; judged alike." in html
    assert "<like these>" not in html and "<b>judge</b>" not in html
    assert "&lt;b&gt;judge&lt;/b&gt; &amp; co 0 (left out)" in html
    assert "declared 75.0% (90)" in html and "86.7%" in html and "25.0% are escalated" in html
    rows = re.findall(r"<tr><td class=\"num\">(\d)</td>(.*?)</tr>", html)
    assert [r[0] for r in rows] == ["1", "2"]
    assert "0.710" in rows[0][1] and "50.0%" in rows[0][1] and "85.0%" in rows[0][1]
    assert "0.900" in rows[1][1] and "judge-c 1.40" in rows[1][1] and "25.0%" in rows[1][1]
    assert "risk 0.05 (the risk split over 2 tiers)" in html
    text = render_validity_markdown(report)
    assert "**Guarantee: agreement with people at least 80%, with probability at least 90%.**" in (
        text
    )
    assert "Target agreement 0.8, risk 0.1. On new items &lt;like these&gt;" in text
    assert "Condition: New items are exchangeable" in text
    assert "| 2 | judge-a 0.90, &lt;b&gt;judge&lt;/b&gt; &amp; co 0 (left out), judge-c 1.40 |" in (
        text
    )


def test_comparisons_name_their_basis_and_the_summary_reads_80_and_the_judge_coverage() -> None:
    report = planted_report()
    bases = {(c.panel, c.basis) for c in report.equal_coverage}
    assert bases == {(p, b) for p in ("labels", "equal") for b in ("gate", "judge", "fixed")}
    page = render_validity_html(report)
    text = render_validity_markdown(report)
    for c in report.equal_coverage:
        basis = {
            "gate": "at the gate's coverage",
            "judge": "at the best judge's own coverage",
            "fixed": "at 80%",
        }[c.basis]
        row = f"| {c.panel} | {basis} | {c.coverage:.1%} | {c.panel_accuracy.text()} |"
        assert row in text
        assert c.difference.text() in text
        assert f"<td>{basis}</td>".replace("'", "&#x27;") in page
    summary = render_validity_summary([report])
    head, _, row = summary.strip().splitlines()
    assert head.count("|") - 1 == len(SUMMARY_HEAD) == 13
    cells = [c.strip() for c in row.strip("|").split("|")]
    fixed = next(c for c in report.equal_coverage if c.panel == "labels" and c.basis == "fixed")
    judge = next(c for c in report.equal_coverage if c.panel == "labels" and c.basis == "judge")
    assert fixed.panel_accuracy.value is not None and judge.panel_accuracy.value is not None
    assert cells[10] == f"{fixed.panel_accuracy.value:.2f} [{fixed.panel_accuracy.low:.2f}, " + (
        f"{fixed.panel_accuracy.high:.2f}] at 80%"
    )
    assert cells[11].startswith(f"{judge.panel_accuracy.value:.2f} [")
    assert cells[11].endswith(f"at {judge.coverage:.0%}")
    assert judge.difference.value is not None
    assert cells[12].startswith(f"{judge.difference.value:.2f} [")


def test_validity_cli_writes_the_guarantee_box_only_when_asked(tmp_path: Path) -> None:
    judges, people, _ = planted_pairs(
        400, {"small": 0.7, "large": 0.88, "fooled": 0.6}, fooled=["fooled"], fooled_share=0.4,
        probabilities=True, seed=2,
    )  # fmt: skip
    jpath = write_judgments(tmp_path / "j.csv", table_rows(judges), scale=None)
    lpath = write_judgments(tmp_path / "l.csv", table_rows(people), scale=None)
    base = ["validity", str(jpath), "--labels", str(lpath), "--bootstrap", "20"]
    assert main([*base, "--out", str(tmp_path / "plain")]) == 0
    plain = (tmp_path / "plain" / "validity.html").read_text()
    assert 'id="guarantee"' not in plain and 'id="reliability"' in plain
    asked = ["--target-agreement", "0.8", "--tiers", "small=1,fooled=1,large=2"]
    assert main([*base, *asked, "--out", str(tmp_path / "policy")]) == 0
    page = (tmp_path / "policy" / "validity.html").read_text()
    markdown = (tmp_path / "policy" / "validity.md").read_text()
    assert 'id="guarantee"' in page and "with probability at least 90%" in page
    assert "<script" not in page and "http" not in page
    assert re.search(r"<td class=\"num\">2</td><td><span class=\"nowrap\">small", page)
    assert "**Guarantee: agreement with people at least 80%" in markdown
    curves = _polylines(page)
    assert {"small", "large", "fooled"} <= set(curves)
