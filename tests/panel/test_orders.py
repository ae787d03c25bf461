"""BA rows written "as read": the warning, and its absence on tables written as documented."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from debate._cli.main import main
from debate.judgments import decide_judgments, table_rows, validate_judgments, write_judgments
from debate.panel._orders import BA_AS_READ, MIN_BOTH_ORDERS, ba_as_read
from debate.records import VerdictTable
from tests.support.verdict_tables import as_read, planted_orders, verdict_table

JUDGES = {"a": (0.9, 0.1), "b": (0.8, 0.15), "c": (0.75, 0.2), "d": (0.7, 0.1)}
"""Accuracy, and the share of items on which the judge's readings disagree."""


@pytest.fixture(scope="module")
def written() -> tuple[VerdictTable, np.ndarray]:
    return planted_orders(200, JUDGES, ties=0.05, seed=2)


def test_a_table_written_as_documented_does_not_warn(
    written: tuple[VerdictTable, np.ndarray],
) -> None:
    table, _ = written
    assert ba_as_read(table) is None
    decided = decide_judgments(table)
    assert not any(n.startswith(BA_AS_READ) for n in decided.summary.notes)


def test_ba_rows_written_as_read_warn_with_the_cause_and_the_fix(
    written: tuple[VerdictTable, np.ndarray],
) -> None:
    table, _ = written
    warning = ba_as_read(as_read(table))
    assert warning is not None and "\n" not in warning
    assert warning.startswith(
        "BA rows look written as read: in a BA row, A is still the first option of the "
        "table; swap A and B in those rows (4 of the 4 judges that read both orders of at "
        f"least {MIN_BOTH_ORDERS} items disagree with themselves on most of them, and 4 agree"
    )
    decided = decide_judgments(as_read(table))
    assert warning in decided.summary.notes
    # What it costs: every consistent judge reads as a tie, so the panel declares far less.
    declared = sum(d.outcome == "winner" for d in decide_judgments(table).decisions)
    assert sum(d.outcome == "winner" for d in decided.decisions) < declared / 4


def test_position_bias_in_correct_rows_is_not_taken_for_relabelled_rows() -> None:
    # Every judge picks the answer it saw first: A reading AB, B reading BA, on every item.
    # Swapping would make them consistent too, but the disagreements are all one way.
    rows = [(i, j, v, o) for i in range(30) for j in range(3) for v, o in ((0, 1), (1, 2))]
    table = verdict_table(rows, 30, ("x", "y", "z"))
    assert ba_as_read(table) is None


def test_too_few_items_read_in_both_orders_do_not_warn(
    written: tuple[VerdictTable, np.ndarray],
) -> None:
    table, _ = written
    few = as_read(table)
    keep = few.item < MIN_BOTH_ORDERS - 1
    small = VerdictTable(
        source="few",
        items=few.items,
        judges=few.judges,
        item=few.item[keep],
        judge=few.judge[keep],
        verdict=few.verdict[keep],
        order=few.order[keep],
    )
    assert ba_as_read(small) is None
    assert ba_as_read(few) is not None


def test_the_warning_reaches_the_validity_report(written: tuple[VerdictTable, np.ndarray]) -> None:
    table, truth = written
    people = verdict_table(
        [(i, p, int(t), 0) for i, t in enumerate(truth) for p in range(3)],
        len(truth),
        ("p1", "p2", "p3"),
    )
    report = validate_judgments(as_read(table), people, folds=3, n_boot=50).report
    assert any(n.startswith(BA_AS_READ) for n in report.notes)
    clean = validate_judgments(table, people, folds=3, n_boot=50).report
    assert not any(n.startswith(BA_AS_READ) for n in clean.notes)


def test_the_cli_says_it_on_stderr(
    written: tuple[VerdictTable, np.ndarray],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    table, truth = written
    path = tmp_path / "as-read.csv"
    write_judgments(path, table_rows(as_read(table)), scale=None)
    # Decisions to a file: the summary goes to stdout, the warning to stderr.
    assert main(["decide", str(path), "--out", str(tmp_path / "d.jsonl")]) == 0
    out, err = capsys.readouterr()
    assert f"note: {BA_AS_READ}" in out
    assert err.startswith(f"warning: {BA_AS_READ}") and err.count("\n") == 1
    # Decisions to stdout: the summary, on stderr, carries it once.
    assert main(["decide", str(path)]) == 0
    _, err = capsys.readouterr()
    assert err.count(BA_AS_READ) == 1
    labels = tmp_path / "labels.csv"
    rows = [{"item": f"i{i}", "judge": "p1", "verdict": "AB"[int(t)]} for i, t in enumerate(truth)]
    write_judgments(labels, rows, scale=None)
    argv = ["validity", str(path), "--labels", str(labels), "--folds", "3", "--bootstrap", "20"]
    assert main([*argv, "--out", str(tmp_path / "v")]) == 0
    _, err = capsys.readouterr()
    assert f"warning: {BA_AS_READ}" in err
    clean = tmp_path / "clean.csv"
    write_judgments(clean, table_rows(table), scale=None)
    assert main(["decide", str(clean), "--out", str(tmp_path / "c.jsonl")]) == 0
    assert BA_AS_READ not in "".join(capsys.readouterr())
