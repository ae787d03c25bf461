from __future__ import annotations

import json
from pathlib import Path

import pytest

from debate._cli.main import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["agreement", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_alpha_with_bootstrap_interval(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv = tmp_path / "r.csv"
    csv.write_text(
        "1,2,3,3,2,1,4,1,2,,,\n1,2,3,3,2,2,4,1,2,5,,3\n,3,3,3,2,3,4,2,2,5,1,\n"
        "1,2,3,3,2,4,4,1,2,5,1,\n"
    )
    flags = ("--layout", "raters-by-items")
    code, out, _ = run(
        capsys, str(csv), *flags, "--level", "interval", "--bootstrap", "200", "--json"
    )
    assert code == 0
    report = json.loads(out)
    assert report["alpha"] == pytest.approx(0.849, abs=5e-4)
    assert report["ci95"][0] < report["alpha"] < report["ci95"][1]
    code, out, _ = run(capsys, str(csv), *flags, "--level", "nominal", "--bootstrap", "50")
    assert code == 0 and "alpha (nominal) = 0.7434" in out


def test_fleiss_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv = tmp_path / "l.csv"
    csv.write_text("item,r1,r2\nx,1,1\ny,1,2\nz,2,2\nw,3,3\nv,3,1\nu,2,2\n")
    code, out, _ = run(capsys, str(csv), "--format", "fleiss", "--header", "--names")
    assert code == 0 and "Fleiss' kappa = 0.4894" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [("1,2\n3\n", "row 2 has 1 cells"), ("1,a\n2,3\n", "not a number"), ("", "no ratings")],
)
def test_bad_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    csv = tmp_path / "bad.csv"
    csv.write_text(content)
    code, _, err = run(capsys, str(csv))
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "nope.csv")
    assert code == 2 and "does not exist" in err


def test_unequal_raters_points_to_alpha(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv = tmp_path / "l.csv"
    csv.write_text("1,1\n1,\n")
    code, _, err = run(capsys, str(csv), "--format", "fleiss", "--layout", "items-by-raters")
    assert code == 2 and "krippendorff_alpha" in err


KRIPPENDORFF_ITEMS = (
    "1,1,,1\n2,2,3,2\n3,3,3,3\n3,3,3,3\n2,2,2,2\n1,2,3,4\n4,4,4,4\n1,1,2,1\n2,2,2,2\n"
    ",5,5,5\n,,1,1\n,,3,\n"
)
"""Krippendorff's reliability example as a ratings sheet: 12 items (rows) x 4 raters."""


def test_rows_are_items_and_the_reading_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    csv = tmp_path / "sheet.csv"
    csv.write_text(KRIPPENDORFF_ITEMS)
    code, out, err = run(capsys, str(csv), "--bootstrap", "0", "--json")
    report = json.loads(out)
    assert code == 0 and report["alpha"] == pytest.approx(0.849, abs=5e-4)
    assert (report["layout"], report["units"], report["raters"]) == ("items-by-raters", 12, 4)
    assert err.startswith("warning: ") and "items-by-raters" in err and "--layout" in err
    # the transposed reading of the same table gives another alpha: the layout matters
    code, out, err = run(
        capsys, str(csv), "--layout", "raters-by-items", "--bootstrap", "0", "--json"
    )
    transposed = json.loads(out)
    assert code == 0 and transposed["alpha"] == pytest.approx(-0.032, abs=5e-4)
    assert (transposed["units"], transposed["raters"]) == (4, 12) and err == ""
    code, out, err = run(capsys, str(csv), "--layout", "items-by-raters", "--bootstrap", "0")
    assert code == 0 and "0.8491" in out and err == ""


def test_a_square_table_needs_a_layout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv = tmp_path / "square.csv"
    csv.write_text("1,2,3\n1,2,4\n2,2,3\n")
    code, out, err = run(capsys, str(csv))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith("error: --layout: the table is square (3 x 3)")
    code, _, _ = run(capsys, str(csv), "--layout", "raters-by-items", "--bootstrap", "0")
    assert code == 0


def test_fleiss_reads_the_transposed_layout_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    csv = tmp_path / "t.csv"
    csv.write_text("1,1,2,3,3,2\n1,2,2,3,1,2\n")  # test_fleiss_format's table, rows = raters
    code, out, _ = run(capsys, str(csv), "--format", "fleiss", "--layout", "raters-by-items")
    assert code == 0 and "Fleiss' kappa = 0.4894" in out and "6 items x 2 raters" in out
