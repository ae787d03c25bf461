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


# --- an id column is not a rater (issue 29, part 7) ------------------------------------

IDS_AND_RATINGS = "id,r1,r2,r3\n" + "".join(
    f"{i},{s},{s},{min(5, s + (i % 4 == 0))}\n"
    for i, s in enumerate([1, 2, 3, 4, 5, 2, 3, 4, 1, 5, 3, 2], start=1)
)


@pytest.mark.parametrize(
    ("header", "flags", "why"),
    [
        ("id", ("--header",), "its header is 'id'"),
        ("Item ID", ("--header",), "its header is 'Item ID'"),
        ("n", ("--header",), "distinct per row and unlike the ratings"),
        (None, (), "distinct per row and unlike the ratings"),
    ],
)
def test_an_id_column_is_refused_naming_names(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    header: str | None,
    flags: tuple[str, ...],
    why: str,
) -> None:
    """Before: --header on this file counted the ids as a fourth rater: alpha 0.102, not 0.957."""
    lines = IDS_AND_RATINGS.splitlines(keepends=True)
    text = "".join(lines[1:]) if header is None else f"{header},r1,r2,r3\n" + "".join(lines[1:])
    csv = tmp_path / "ids.csv"
    csv.write_text(text)
    code, out, err = run(capsys, str(csv), *flags, "--bootstrap", "0")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("error: --names:") and why in err and "give --names" in err
    code, out, _ = run(capsys, str(csv), *flags, "--names", "--bootstrap", "0", "--json")
    assert code == 0 and json.loads(out)["raters"] == 3
    assert json.loads(out)["alpha"] == pytest.approx(0.9571, abs=1e-4)  # by hand: D_o/D_e


@pytest.mark.parametrize(
    "content",
    [
        "a,b\nlow,low\nmid,high\nhigh,high\n",  # labels a rater used: ratings
        "r1,r2\n1,1\n2,2\n3,3\n4,4\n5,5\n",  # a climbing rater inside the others' range
        "r1,r2\n1,2\n1,3\n2,5\n",  # repeats
    ],
)
def test_a_rater_column_is_not_taken_for_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str
) -> None:
    csv = tmp_path / "r.csv"
    csv.write_text(content)
    code, _, err = run(capsys, str(csv), "--header", "--level", "nominal", "--bootstrap", "0")
    assert code == 0 and "--names" not in err


# --- ordinal errors name the flag (issue 29, part 7) ------------------------------------


def test_ordinal_labels_without_an_order_name_the_domain_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "ordinal labels need their order: pass value_domain, e.g. [...]"."""
    csv = tmp_path / "o.csv"
    csv.write_text("a,b\nlow,low\nmid,high\nhigh,high\nlow,mid\n")
    code, _, err = run(capsys, str(csv), "--header", "--level", "ordinal", "--bootstrap", "0")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("error: --domain:") and "value_domain" not in err
    assert "--domain low,mid,high" in err
    code, _, err = run(
        capsys,
        str(csv),
        "--header",
        "--level",
        "ordinal",
        "--domain",
        "low,mid",
        "--bootstrap",
        "0",
    )
    assert code == 2 and "'high' is not in --domain" in err and "value_domain" not in err
    code, out, _ = run(
        capsys, str(csv), "--header", "--level", "ordinal", "--domain", "low,mid,high", "--json"
    )
    assert code == 0 and json.loads(out)["alpha"] is not None


def test_a_numeric_domain_matches_numeric_cells(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: --domain 1,2,3 refused cells read as 1.0 ("value 1.0 is not in value_domain")."""
    csv = tmp_path / "n.csv"
    csv.write_text("a,b\n1,1\n2,2\n3,3\n1,2\n")
    flags = ("--header", "--level", "ordinal", "--bootstrap", "0", "--json")
    code, out, err = run(capsys, str(csv), *flags, "--domain", "1,2,3")
    assert code == 0, err
    assert json.loads(out)["alpha"] == pytest.approx(0.79, abs=1e-4)
