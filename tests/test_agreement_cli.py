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
    code, out, _ = run(capsys, str(csv), "--level", "interval", "--bootstrap", "200", "--json")
    assert code == 0
    report = json.loads(out)
    assert report["alpha"] == pytest.approx(0.849, abs=5e-4)
    assert report["ci95"][0] < report["alpha"] < report["ci95"][1]
    code, out, _ = run(capsys, str(csv), "--level", "nominal", "--bootstrap", "50")
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
    code, _, err = run(capsys, str(csv), "--format", "fleiss")
    assert code == 2 and "krippendorff_alpha" in err
