"""``debate agreement``'s flags, on a ratings sheet (no model)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from debate._cli.main import main

# --- agreement ---------------------------------------------------------------------------

RATINGS = "1,2,3,3,2,1,4,1,2\n1,2,3,3,2,2,4,1,2\n2,3,3,3,2,3,4,2,2\n1,2,3,3,2,4,4,1,2\n"


def agreement(capsys: pytest.CaptureFixture[str], path: Path, *argv: str) -> dict[str, Any]:
    assert main(["agreement", str(path), "--json", *argv]) == 0
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return report


@pytest.fixture
def ratings(tmp_path: Path) -> Path:
    path = tmp_path / "ratings.csv"
    path.write_text(RATINGS)
    return path


def test_agreement_file_is_read(ratings: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = ratings.with_name("other.csv")
    other.write_text("1,2,3\n1,2,3\n")
    raters = ("--layout", "raters-by-items", "--bootstrap", "0")  # a row per rater
    assert agreement(capsys, other, *raters)["alpha"] == pytest.approx(1.0)
    assert agreement(capsys, ratings, *raters)["alpha"] < 1.0


def test_agreement_level_changes_the_statistic(
    ratings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    interval = agreement(capsys, ratings, "--bootstrap", "0")["alpha"]
    nominal = agreement(capsys, ratings, "--bootstrap", "0", "--level", "nominal")["alpha"]
    assert interval != pytest.approx(nominal)


def test_agreement_format_fleiss(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "labels.csv"
    path.write_text("1,1\n1,2\n2,2\n3,3\n3,1\n2,2\n")
    assert "alpha" in agreement(capsys, path, "--bootstrap", "0")
    assert agreement(capsys, path, "--format", "fleiss")["kappa"] == pytest.approx(0.4894, abs=1e-4)


def test_agreement_names_skips_the_first_column(
    tmp_path: Path, ratings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "named.csv"
    path.write_text("".join(f"rater{n},{row}\n" for n, row in enumerate(RATINGS.splitlines())))
    assert main(["agreement", str(path), "--bootstrap", "0"]) == 2
    assert "give --names" in capsys.readouterr().err  # the name column is not read as a rater
    named = agreement(capsys, path, "--names", "--bootstrap", "0")["alpha"]
    assert named == pytest.approx(agreement(capsys, ratings, "--bootstrap", "0")["alpha"])


def test_agreement_header_skips_the_first_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "header.csv"
    path.write_text("9,9,9,9,9,9,9,9,9\n" + RATINGS)
    with_header = agreement(capsys, path, "--header", "--bootstrap", "0")["alpha"]
    without = agreement(capsys, path, "--bootstrap", "0")["alpha"]
    path.write_text(RATINGS)
    assert with_header == pytest.approx(agreement(capsys, path, "--bootstrap", "0")["alpha"])
    assert without != pytest.approx(with_header)


def test_agreement_bootstrap_gives_an_interval(
    ratings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert agreement(capsys, ratings, "--bootstrap", "0").get("ci95") is None
    ci = agreement(capsys, ratings, "--bootstrap", "200")["ci95"]
    assert ci[0] < ci[1]


def test_agreement_seed_draws_another_bootstrap(
    ratings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = agreement(capsys, ratings, "--bootstrap", "200", "--seed", "1")["ci95"]
    same = agreement(capsys, ratings, "--bootstrap", "200", "--seed", "1")["ci95"]
    other = agreement(capsys, ratings, "--bootstrap", "200", "--seed", "2")["ci95"]
    assert one == same and one != other


def test_agreement_domain_orders_labels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ordinal.csv"
    path.write_text("low,mid,high,high\nlow,high,high,mid\nmid,mid,high,high\n")
    argv = ("--level", "ordinal", "--bootstrap", "0", "--layout", "raters-by-items")
    natural = agreement(capsys, path, *argv, "--domain", "low,mid,high")["alpha"]
    shuffled = agreement(capsys, path, *argv, "--domain", "mid,low,high")["alpha"]
    assert natural != pytest.approx(shuffled)


def test_agreement_json_is_machine_readable(
    ratings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["agreement", str(ratings), "--bootstrap", "0"]) == 0
    text = capsys.readouterr().out
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    assert "alpha" in agreement(capsys, ratings, "--bootstrap", "0")
