"""The shipped PandaLM panel: `debate example` writes it, and `validity --brief` reads it.

The wheel that ships the tables is tested in tests/runtime/test_prompts.py (one wheel build for
both), which runs `debate example` from the unpacked wheel.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from debate._cli.main import main
from debate.judgments import read_judgments
from debate.records import ValidityReport, VerdictTable
from debate.report import render_validity_brief
from tests.support import ROOT

SHIPPED = ROOT / "debate" / "data" / "examples" / "pandalm"
PANDALM = ROOT.parent / "shared" / "datasets" / "pandalm"


def test_example_writes_readable_tables_and_says_what_to_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "pandalm"
    assert main(["example", "pandalm", "--out", str(out)]) == 0
    judgments = read_judgments(out / "judgments.csv")
    labels = read_judgments(out / "labels.csv")
    assert isinstance(judgments, VerdictTable) and isinstance(labels, VerdictTable)
    assert judgments.judges == ("gpt-3.5-turbo", "pandalm-7b")
    assert len(judgments.items) == 999 and judgments.rows == 1973  # 25 'garbage' left out
    assert labels.judges == ("annotator1", "annotator2", "annotator3")
    assert len(labels.items) == 999 and labels.rows == 2997
    assert "Apache License" in (out / "LICENSE").read_text()
    assert "3871806e72b4832f815ecafd24d3503c73403f48" in (out / "NOTICE").read_text()
    printed = capsys.readouterr().out
    assert f"{out / 'judgments.csv'}: 1,973 verdicts of 2 judges on 999 items" in printed
    assert f"debate validity {out / 'judgments.csv'} --labels {out / 'labels.csv'}" in printed


def test_example_again_is_harmless_but_never_overwrites_other_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "here"
    assert main(["example", "pandalm", "--out", str(out)]) == 0
    assert main(["example", "pandalm", "--out", str(out)]) == 0  # same files: fine
    mine = out / "labels.csv"
    mine.write_text("item,judge,verdict\nmine,me,A\n")
    capsys.readouterr()
    assert main(["example", "pandalm", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--out" in err and "labels.csv" in err
    assert mine.read_text() == "item,judge,verdict\nmine,me,A\n"


def test_example_refuses_an_unknown_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["example", "nope"]) == 2
    assert "pandalm" in capsys.readouterr().err


def test_example_is_listed_in_debate_help() -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "debate", "--help"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert "example" in shown and "real recorded panel" in shown


def test_shipped_tables_are_small() -> None:
    size = sum(p.stat().st_size for p in SHIPPED.iterdir())
    assert size < 200_000, size  # well under the 1 MB the package allows itself


@pytest.mark.skipif(not PANDALM.is_dir(), reason=f"the PandaLM data set is not at {PANDALM}")
def test_shipped_tables_are_the_converters_output(tmp_path: Path) -> None:
    converter = ROOT / "examples" / "datasets" / "pandalm.py"
    subprocess.run(
        [sys.executable, str(converter), str(PANDALM), str(tmp_path)],
        check=True,
        capture_output=True,
    )
    for name in ("judgments.csv", "labels.csv"):
        assert (tmp_path / name).read_bytes() == (SHIPPED / name).read_bytes(), name


def demo_commands(demo_out: Path) -> list[list[str]]:
    """The `debate` commands `make demo` runs after the debate, its variables filled in."""
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    variables = dict(re.findall(r"^(DEMO_\w+)\s*:=\s*(.*)$", text, flags=re.M))
    recipe = text.split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    commands = []
    for line in recipe.splitlines():
        line = line.strip()
        if not line.startswith("$(BIN)/debate ") or " run " in line:
            continue
        line = re.sub(r"\$\((DEMO_\w+)\)", lambda m: variables[m.group(1)].strip(), line)
        words = shlex.split(line.replace("demo-out", str(demo_out)))
        commands.append(words[1:])
    return commands


def test_validity_brief_on_the_shipped_panel(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What `make demo` ends with, run as the Makefile writes it: best judge, panel, guarantee."""
    example, validity = demo_commands(tmp_path / "demo-out")
    assert example[:2] == ["example", "pandalm"] and validity[0] == "validity"
    assert main(example) == 0
    capsys.readouterr()
    assert main(validity) == 0
    out = Path(validity[validity.index("--out") + 1])
    printed = capsys.readouterr().out
    lines = printed.strip().splitlines()
    assert len(lines) <= 10, printed
    assert "best single judge, gpt-3.5-turbo" in printed
    assert "against gpt-3.5-turbo" in printed and "on all items (100 %)" in printed
    assert "with --target-agreement 0.8 --risk 0.1 the policy declares" in printed
    assert "guarantee: " in printed and "at least 0.8 with probability at least 0.9" in printed
    assert "--bootstrap 200" in " ".join(validity)  # modest: the demo takes seconds
    assert f"--policy {out / 'policy.json'}" in printed
    assert "| method |" not in printed  # no tables
    for name in ("validity.html", "validity.md", "validity.json", "policy.json"):
        assert (out / name).is_file(), name
    # Every figure is the report's own, as the full report prints it.
    report = ValidityReport.model_validate_json((out / "validity.json").read_text())
    assert report.best_judge is not None and report.policy is not None
    assert report.method(report.best_judge).declared_accuracy.text() in printed
    same = next(c for c in report.equal_coverage if c.panel == "labels" and c.basis == "judge")
    assert same.panel_accuracy.text() in printed
    curve = next(c for c in report.risk_coverage if c.method == "labels" and c.kind == "panel")
    assert f"(100 %): {curve.curve[-1].accuracy:.3f}" in printed
    assert f"declares {report.policy.coverage:.0%} of the" in printed
    assert report.policy.guarantee in printed


def test_brief_leaves_out_what_the_report_lacks() -> None:
    """No best judge, no comparison, no policy: the brief says only what there is."""
    from debate.records import AgreementComparison

    bare = ValidityReport(
        source="t.csv", kind="verdicts", units=3, labelled=0, items=3, folds=2, seed=0,
        bootstrap=10, methods=[], best_judge=None, best_judge_rule="r", risk_coverage=[],
        agreement=AgreementComparison(alpha_judges=None, alpha_people=None, level="nominal"),
    )  # fmt: skip
    text = render_validity_brief(bare)
    assert text.startswith("t.csv: 3 items, 0 with a people's majority")
    assert text.count("\n") == 1  # that line alone: nothing made up


def test_validity_brief_and_json_are_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["validity", "x.csv", "--labels", "y.csv", "--brief", "--json"])
    assert code == 2
    assert "--brief" in capsys.readouterr().err
