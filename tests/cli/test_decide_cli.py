"""``debate decide`` and ``debate validity`` on small tables: every flag changes something."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from debate._cli.main import main
from debate.judgments import (
    TrackRecords,
    planted_scores,
    planted_verdicts,
    table_rows,
    write_judgments,
)

ACCURACY = {"sharp": 0.85, "good": 0.75, "fair": 0.68, "adversary": 0.2}
SCORES = """# scale: 1-5
item,option,judge,dimension,score
q1,a,j1,clarity,5
q1,b,j1,clarity,2
q1,a,j2,clarity,4
q1,b,j2,clarity,1
q1,a,j1,depth,4
q1,b,j1,depth,3
q1,a,j2,depth,4
q1,b,j2,depth,2
q2,a,j1,clarity,1
q2,b,j1,clarity,5
q2,a,j2,clarity,5
q2,b,j2,clarity,1
q2,a,j1,depth,2
q2,b,j1,depth,4
q2,a,j2,depth,4
q2,b,j2,depth,2
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture()
def scores(tmp_path: Path) -> Path:
    path = tmp_path / "scores.csv"
    path.write_text(SCORES, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("planted")
    judged, people = planted_verdicts(300, ACCURACY, people=3, seed=8)
    write_judgments(folder / "judgments.csv", table_rows(judged), scale=None)
    write_judgments(folder / "labels.jsonl", table_rows(people), scale=None)
    return folder / "judgments.csv", folder / "labels.jsonl"


def decisions(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_decide_file_is_read_and_every_item_decided(
    capsys: pytest.CaptureFixture[str], scores: Path
) -> None:
    code, out, err = run(capsys, "decide", str(scores))
    assert code == 0
    rows = decisions(out)
    assert [(r["item"], r["outcome"], r["winner"]) for r in rows] == [
        ("q1", "winner", "a"),
        ("q2", "irreconcilable", None),
    ]
    assert "2 decisions: 1 winner, 1 irreconcilable" in err


def test_decide_dimension_decides_on_that_dimension_only(
    capsys: pytest.CaptureFixture[str], scores: Path
) -> None:
    _, all_dims, _ = run(capsys, "decide", str(scores))
    _, depth, _ = run(capsys, "decide", str(scores), "--dimension", "depth")
    assert decisions(depth)[0]["dimension"] == "depth"
    assert decisions(depth)[0]["margin_points"] != decisions(all_dims)[0]["margin_points"]
    code, _, err = run(capsys, "decide", str(scores), "--dimension", "style")
    assert code == 2 and "use one of clarity, depth" in err


def test_decide_scale_is_required_when_the_file_does_not_declare_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bare = tmp_path / "bare.csv"
    bare.write_text(SCORES.split("\n", 1)[1], encoding="utf-8")
    code, _, err = run(capsys, "decide", str(bare))
    assert code == 2 and "scale" in err and len(err.strip().splitlines()) == 1
    code, out, _ = run(capsys, "decide", str(bare), "--scale", "1-5")
    assert code == 0 and len(decisions(out)) == 2


def test_decide_out_writes_the_decisions_and_json_the_summary(
    capsys: pytest.CaptureFixture[str], scores: Path, tmp_path: Path
) -> None:
    out_file = tmp_path / "decisions.jsonl"
    code, out, _ = run(capsys, "decide", str(scores), "--out", str(out_file), "--json")
    assert code == 0
    summary = json.loads(out)
    assert summary["decisions"] == 2 and summary["outcomes"]["winner"] == 1
    assert len(decisions(out_file.read_text())) == 2


def test_decide_weights_change_the_vote(
    capsys: pytest.CaptureFixture[str], scores: Path, tmp_path: Path
) -> None:
    weights = tmp_path / "weights.json"
    weights.write_text(json.dumps({"j1": 1.0, "j2": 0.0}))
    _, equal, _ = run(capsys, "decide", str(scores))
    _, given, err = run(capsys, "decide", str(scores), "--weights", str(weights))
    assert "weights: given: j1 1, j2 0" in err
    assert decisions(given)[1]["margin_points"] != decisions(equal)[1]["margin_points"]
    weights.write_text(json.dumps({"j1": 1.0}))
    code, _, err = run(capsys, "decide", str(scores), "--weights", str(weights))
    assert code == 2 and "no weight for judge 'j2'" in err


def test_decide_latent_weights_are_fitted(
    capsys: pytest.CaptureFixture[str], planted: tuple[Path, Path]
) -> None:
    code, _, err = run(capsys, "decide", str(planted[0]), "--weights", "latent", "--json")
    summary = json.loads(err)
    assert code == 0 and summary["weights_source"] == "latent"
    assert summary["weights"]["adversary"] == 0.0
    assert summary["weights"]["sharp"] > summary["weights"]["fair"]


def test_decide_track_records_weigh_the_judges(
    capsys: pytest.CaptureFixture[str], scores: Path, tmp_path: Path
) -> None:
    records = TrackRecords(tmp_path / "records.sqlite")
    records.add([("j2", f"i{n}", "set", "A", "B") for n in range(30)])
    code, _, err = run(
        capsys, "decide", str(scores), "--track-records", str(records.path), "--json"
    )
    summary = json.loads(err)
    assert code == 0 and summary["weights_source"].startswith("track-records:")
    assert summary["weights"]["j1"] == 1.0 and summary["weights"]["j2"] < 0.5


def test_decide_seed_and_config_reach_the_rules(
    capsys: pytest.CaptureFixture[str], scores: Path, tmp_path: Path
) -> None:
    config = tmp_path / "panel.toml"
    config.write_text("[thresholds]\nalpha = -1.0\nkappa = -1.0\nvariance = 100.0\n")
    _, strict, _ = run(capsys, "decide", str(scores))
    _, loose, _ = run(capsys, "decide", str(scores), "--config", str(config))
    assert decisions(strict)[1]["outcome"] == "irreconcilable"
    assert decisions(loose)[1]["outcome"] != "irreconcilable"
    judged, _ = planted_scores(40, ("x", "y"), {"a": 0.5, "b": 0.9, "c": 1.3, "d": 1.6}, seed=1)
    many = tmp_path / "many.csv"
    write_judgments(many, table_rows(judged), scale=judged.scale)
    _, one, _ = run(capsys, "decide", str(many), "--seed", "1")
    _, two, _ = run(capsys, "decide", str(many), "--seed", "2")
    _, again, _ = run(capsys, "decide", str(many), "--seed", "1")
    assert one == again
    assert [d["interval"] for d in decisions(one)] != [d["interval"] for d in decisions(two)]


def test_validity_writes_the_report_and_prints_the_tables(
    capsys: pytest.CaptureFixture[str], planted: tuple[Path, Path], tmp_path: Path
) -> None:
    out = tmp_path / "v"
    code, text, _ = run(
        capsys,
        "validity",
        str(planted[0]),
        "--labels",
        str(planted[1]),
        "--out",
        str(out),
        "--bootstrap",
        "50",
        "--folds",
        "3",
    )
    assert code == 0
    assert {p.name for p in out.iterdir()} == {
        "validity.json",
        "validity.html",
        "validity.md",
        "rows.csv",
    }
    report = json.loads((out / "validity.json").read_text())
    assert report["folds"] == 3 and report["bootstrap"] == 50
    assert "sharp" in text and "<svg" in (out / "validity.html").read_text()


def test_validity_json_and_people_in_the_same_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    judged, people = planted_verdicts(200, ACCURACY, people=3, seed=9)
    both = tmp_path / "both.csv"
    rows = list(table_rows(judged)) + list(table_rows(people))
    write_judgments(both, rows, scale=None)
    code, text, _ = run(
        capsys,
        "validity",
        str(both),
        "--people",
        ",".join(people.judges),
        "--json",
        "--bootstrap",
        "20",
        "--seed",
        "3",
        "--out",
        str(tmp_path / "o"),
    )
    report = json.loads(text)
    assert code == 0 and report["seed"] == 3
    assert not any(m["name"] in people.judges for m in report["methods"])


def test_validity_dimension_each_and_label_scale(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    judged, people = planted_scores(
        60, ("x", "y", "z"), {"a": 0.3, "b": 0.8, "c": 1.2}, people=3, seed=2
    )
    write_judgments(tmp_path / "j.csv", table_rows(judged), scale=judged.scale)
    write_judgments(tmp_path / "p.csv", table_rows(people), scale=people.scale)
    undeclared = (tmp_path / "p.csv").read_text().split("\n", 1)[1]  # drop "# scale: ..."
    (tmp_path / "p.csv").write_text(undeclared)
    args = ["validity", str(tmp_path / "j.csv"), "--labels", str(tmp_path / "p.csv")]
    code, _, err = run(capsys, *args, "--out", str(tmp_path / "x"))
    assert code == 2 and "scale" in err
    code, _, _ = run(
        capsys,
        *args,
        "--label-scale",
        str(people.scale),
        "--dimension",
        "each",
        "--bootstrap",
        "20",
        "--out",
        str(tmp_path / "each"),
    )
    names = {p.name for p in (tmp_path / "each").iterdir()}
    assert code == 0
    assert {f"validity-{d}.json" for d in judged.dimensions} | {"validity-all.json"} <= names
    summary = (tmp_path / "each" / "summary.md").read_text()
    assert len(summary.strip().splitlines()) == 2 + len(judged.dimensions) + 1  # head, rule


def test_validity_needs_labels(capsys: pytest.CaptureFixture[str], scores: Path) -> None:
    code, _, err = run(capsys, "validity", str(scores))
    assert code == 2 and "--labels" in err


def test_validity_config_thresholds_reach_the_gate(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A stricter gap makes the gated panel declare fewer verdicts; --scale reads the file."""
    judged, people = planted_scores(80, ("x", "y"), {"a": 0.5, "b": 0.9, "c": 1.3}, seed=5)
    write_judgments(tmp_path / "j.csv", table_rows(judged), scale=judged.scale)
    bare = (tmp_path / "j.csv").read_text().split("\n", 1)[1]
    (tmp_path / "j.csv").write_text(bare)
    write_judgments(tmp_path / "p.csv", table_rows(people), scale=people.scale)
    config = tmp_path / "strict.toml"
    config.write_text("[thresholds]\ngap = 0.9\n")
    base = ["validity", str(tmp_path / "j.csv"), "--labels", str(tmp_path / "p.csv")]
    base += ["--bootstrap", "20", "--json", "--scale", str(judged.scale)]
    code, loose, _ = run(capsys, *base, "--out", str(tmp_path / "a"))
    code2, strict, _ = run(capsys, *base, "--config", str(config), "--out", str(tmp_path / "b"))
    coverage = [
        next(m for m in json.loads(text)["methods"] if m["name"] == "equal")["coverage"]["value"]
        for text in (loose, strict)
    ]
    assert code == code2 == 0
    assert coverage[1] < coverage[0]
    code, _, err = run(capsys, *base[:-2], "--out", str(tmp_path / "c"))
    assert code == 2 and "scale" in err


def test_a_dimension_the_labels_lack_is_named_in_one_line(
    capsys: pytest.CaptureFixture[str], scores: Path, tmp_path: Path
) -> None:
    labels = tmp_path / "people.csv"
    labels.write_text(SCORES.replace("clarity", "Clarity").replace("j1", "p1").replace("j2", "p2"))
    code, _, err = run(
        capsys,
        "validity",
        str(scores),
        "--labels",
        str(labels),
        "--dimension",
        "clarity",
        "--folds",
        "2",
        "--out",
        str(tmp_path / "o"),
    )
    assert code == 2
    assert err.strip() == (
        f"error: --labels: dimension 'clarity' is not in {labels}; use one of Clarity, depth"
    )


def test_validity_dimension_each_refuses_a_target_on_one_dimension_and_keeps_the_others(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """People's scores on ``murky`` are noise: no threshold reaches the target there, and
    that dimension says so, while ``clear`` and the mean get their policies."""
    rng = np.random.default_rng(5)
    judges, people = [], []
    for dimension, seed in (("clear", 2), ("murky", 3)):
        j, p = planted_scores(150, ("x", "y", "z"), {"a": 0.3, "b": 0.5, "c": 0.8}, seed=seed)
        judges += [{**r, "dimension": dimension} for r in table_rows(j)]
        for r in table_rows(p):
            if dimension == "murky":
                r["score"] = float(rng.integers(1, 6))
            people.append({**r, "dimension": dimension})
    write_judgments(tmp_path / "j.csv", judges, scale=j.scale)
    write_judgments(tmp_path / "p.csv", people, scale=p.scale)
    out = tmp_path / "each"
    code, _, err = run(
        capsys, "validity", str(tmp_path / "j.csv"), "--labels", str(tmp_path / "p.csv"),
        "--dimension", "each", "--target-agreement", "0.8", "--bootstrap", "20",
        "--out", str(out),
    )  # fmt: skip
    assert code == 0, err
    assert "warning: murky: no policy: --target-agreement 0.8" in err
    assert (out / "policy-clear.json").exists() and not (out / "policy-murky.json").exists()
    murky = json.loads((out / "validity-murky.json").read_text())
    assert murky["policy"] is None and "cannot be guaranteed" in murky["policy_refusal"]
    summary = (out / "summary.md").read_text()
    assert "policy: coverage (agreement)" in summary and "| refused |" in summary
    assert "No policy" in (out / "validity-murky.html").read_text()
    # every dimension refused: one line, exit 2, as for one dimension
    code, _, err = run(
        capsys, "validity", str(tmp_path / "j.csv"), "--labels", str(tmp_path / "p.csv"),
        "--dimension", "each", "--target-agreement", "0.97",
        "--bootstrap", "20", "--out", str(tmp_path / "none"),
    )  # fmt: skip
    assert code == 2 and "no dimension supports the target" in err


def test_decide_aggregate_and_min_judges_reach_the_rules(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """--aggregate majority makes the margin a share of judges; --min-judges 5 of 4 judges
    leaves every item insufficient; both are read by validity's gate too."""
    judged, people = planted_scores(
        30, ("x", "y"), {"a": 0.5, "b": 0.9, "c": 1.3, "d": 1.6}, seed=1
    )
    table = tmp_path / "many.csv"
    write_judgments(table, table_rows(judged), scale=judged.scale)
    _, mean, _ = run(capsys, "decide", str(table))
    _, majority, _ = run(capsys, "decide", str(table), "--aggregate", "majority")
    margins = [float(d["margin"]) for d in decisions(majority) if d["margin"] is not None]
    assert margins and all(abs(4 * m - round(4 * m)) < 1e-9 for m in margins)  # 4 equal votes
    assert [d["margin"] for d in decisions(mean)] != [d["margin"] for d in decisions(majority)]
    _, strict, _ = run(capsys, "decide", str(table), "--min-judges", "5")
    assert {d["outcome"] for d in decisions(strict)} == {"insufficient"}
    code, _, err = run(capsys, "decide", str(table), "--min-judges", "1")
    assert code == 2 and err.startswith("error: --min-judges:")
    labels = tmp_path / "people.csv"
    write_judgments(labels, table_rows(people), scale=people.scale)
    base = ["validity", str(table), "--labels", str(labels), "--bootstrap", "20", "--json"]
    code, loose, _ = run(capsys, *base, "--out", str(tmp_path / "a"))
    code2, none, _ = run(capsys, *base, "--min-judges", "5", "--out", str(tmp_path / "b"))
    coverage = [
        next(m for m in json.loads(text)["methods"] if m["name"] == "equal")["coverage"]["value"]
        for text in (loose, none)
    ]
    assert code == code2 == 0
    assert coverage[0] > 0 and coverage[1] == 0
