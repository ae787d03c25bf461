"""The validity report's page, Markdown, tidy CSV and DataFrame."""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from debate.exceptions import ConfigurationError
from debate.quality._metrics import (
    CSV_COLUMNS,
    frame_dataframe,
    frame_rows,
    validity_report,
    write_frame_csv,
)
from debate.records._judgments import NO_CALL, Calls, DecisionFrame, OptionScores
from debate.records._validity import ValidityReport
from debate.report import render_html, render_validity_html, render_validity_markdown

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
    gated = Calls(
        call=majority,
        declared=outcome == 0,
        confidence=np.abs(margin),
        outcome=outcome.astype(np.int8),
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
        },
        judges=judges,
        option_scores=option_scores,
        weights_by_fold={"labels": [{j: 1.0 + i / 10 for j in JUDGES} for i in range(5)]},
        options=tuple((f"story-{i}/a", f"story-{i}/b") for i in range(n_items)),
    )


def planted_report(frame: DecisionFrame | None = None) -> ValidityReport:
    return validity_report(
        frame or planted_frame(),
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
    assert "| gated panel | coverage |" in text and "| most confident |" in text
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
