"""Every bad input gets one line naming the field and the fix, and exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from debate._cli.main import main

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "meeting_transcript.json"


def fails(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def run(*extra: str) -> list[str]:
    return ["run", "Should we ship?", "--model", "scripted", "--quiet", *extra]


@pytest.mark.parametrize("topic", ["", "   \n\t "])
def test_empty_topic(capsys: pytest.CaptureFixture[str], topic: str) -> None:
    line = fails(capsys, "run", topic, "--model", "scripted", "--quiet")
    assert "topic" in line and "empty" in line


def test_topic_too_long(capsys: pytest.CaptureFixture[str]) -> None:
    line = fails(capsys, "run", "x" * 2001, "--model", "scripted", "--quiet")
    assert "topic is 2001 characters" in line and "at most 2000" in line


def test_fewer_than_two_judges(capsys: pytest.CaptureFixture[str]) -> None:
    line = fails(capsys, *run("--judges", "technical"))
    assert "--judges" in line and "at least two" in line


def test_unknown_judge_role(capsys: pytest.CaptureFixture[str]) -> None:
    line = fails(capsys, *run("--judges", "technical,wizard"))
    assert "unknown judge role 'wizard'" in line and "technical, business, risk, general" in line


@pytest.mark.parametrize(
    ("weights", "expected"),
    [
        ("logic = -0.1, evidence = 0.5, responsiveness = 0.3, honesty = 0.3", "non-negative"),
        ("logic = 0.5, evidence = 0.5, responsiveness = 0.3, honesty = 0.3", "sum to 1"),
    ],
)
def test_bad_rubric_weights(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], weights: str, expected: str
) -> None:
    config = tmp_path / "panel.toml"
    config.write_text(
        f'[[judges]]\nrole = "technical"\nweights = {{ {weights} }}\n[[judges]]\nrole = "risk"\n'
    )
    line = fails(capsys, *run("--config", str(config)))
    assert "judges.0.weights" in line and expected in line


def test_rubric_weights_within_tolerance_are_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "panel.toml"
    config.write_text(
        '[[judges]]\nrole = "technical"\n'
        "weights = { logic = 0.3333333, evidence = 0.3333333, responsiveness = 0.3333334, "
        'honesty = 0.0 }\n[[judges]]\nrole = "risk"\n'
    )
    assert main(run("--config", str(config), "--out", str(tmp_path))) == 0


@pytest.mark.parametrize("n", ["0", "11"])
def test_arguments_out_of_range(capsys: pytest.CaptureFixture[str], n: str) -> None:
    line = fails(capsys, *run("--arguments", n))
    assert f"--arguments: {n} is out of range; use 1 to 10" in line


def test_transcript_not_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "t.json"
    bad.write_text("{ not json")
    line = fails(capsys, "judge", str(bad), "--model", "scripted", "--quiet")
    assert "not valid JSON" in line and "line 1" in line


def test_transcript_fails_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(EXAMPLE.read_text())
    del data["arguments"][0]["claim"]
    bad = tmp_path / "t.json"
    bad.write_text(json.dumps(data))
    line = fails(capsys, "judge", str(bad), "--model", "scripted", "--quiet")
    assert "arguments.0.claim" in line and "Field required" in line


def test_transcript_repeats_argument_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(EXAMPLE.read_text())
    data["arguments"][3]["id"] = "CON-1"
    bad = tmp_path / "t.json"
    bad.write_text(json.dumps(data))
    line = fails(capsys, "judge", str(bad), "--model", "scripted", "--quiet")
    assert "CON-1 appears twice" in line


def test_missing_template_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    line = fails(capsys, *run("--templates", str(tmp_path / "nope")))
    assert "templates" in line and "not a folder" in line


def test_missing_role_template(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "panel.toml"
    config.write_text(
        '[[judges]]\nrole = "legal"\n'
        "weights = { logic = 0.25, evidence = 0.25, responsiveness = 0.25, honesty = 0.25 }\n"
        '[[judges]]\nrole = "risk"\n'
    )
    line = fails(capsys, *run("--config", str(config)))
    assert "judge_role_legal.md.jinja" in line


def test_unreadable_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = fails(capsys, *run("--config", str(tmp_path / "missing.toml")))
    assert "config file" in line and "cannot read" in line


def test_config_not_toml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "panel.toml"
    config.write_text("arguments = = 3")
    line = fails(capsys, *run("--config", str(config)))
    assert "not valid TOML" in line


def test_unknown_config_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "panel.toml"
    config.write_text("argumnets = 3\n")
    line = fails(capsys, *run("--config", str(config)))
    assert "argumnets" in line and "Extra inputs are not permitted" in line


def test_usage_error_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    line = fails(capsys, "run")
    assert line.startswith("error:") and "topic" in line


@pytest.mark.parametrize("n", ["-1", "6"])
def test_rounds_out_of_range(capsys: pytest.CaptureFixture[str], n: str) -> None:
    line = fails(capsys, *run("--rounds", n))
    assert line == f"error: --rounds: {n} is out of range; use 0 to 5"


def test_a_flag_is_checked_by_the_config_and_named_as_the_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = fails(capsys, *run("--timeout", "-1"))
    assert line.startswith("error: --timeout: ") and "greater than 0" in line


def test_a_bad_value_from_the_config_file_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "panel.toml"
    config.write_text("arguments = 11\n")
    line = fails(capsys, *run("--config", str(config)))
    assert line == f"error: {config}.arguments: 11 is out of range; use 1 to 10"
    # a flag overrides the file, and the flag's value is the one checked
    assert main(run("--config", str(config), "--arguments", "2", "--out", str(tmp_path))) == 0
