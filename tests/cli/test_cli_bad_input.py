"""Every bad input gets one line naming the field and the fix, and exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from debate._cli.main import main
from tests.support import ROOT

EXAMPLE = ROOT / "examples" / "meeting_transcript.json"


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


def test_a_bad_seed_is_refused_before_any_call(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support.openai_server import FakeOpenAIServer, Reply

    calls: list[object] = []
    with FakeOpenAIServer(responder=lambda body: calls.append(body) or Reply(status=500)) as s:
        for seed in ("-1", str(2**32), str(2**64 + 1)):
            argv = ["run", "Should we ship?", "--model", "m", "--base-url", s.base_url]
            argv += ["--api-key-env", ""]
            line = fails(capsys, *argv, "--seed", seed, "--no-store", "--quiet")
            assert line.startswith("error: argument --seed: ") and "0 to 4294967295" in line
    assert calls == []  # numpy used to refuse -1 only after every call was paid for


def test_the_seed_bound_is_one_check_for_flags_and_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DEBATE_SEED", str(2**32))
    line = fails(capsys, *run("--out", str(tmp_path / "o")))
    assert (
        line
        == "error: DEBATE_SEED: 4294967296 is out of range; use a whole number from 0 to 4294967295"
    )
    monkeypatch.setenv("DEBATE_SEED", str(2**32 - 1))
    assert main(run("--out", str(tmp_path / "o"), "--no-store", "--no-cache")) == 0


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e400"])
@pytest.mark.parametrize("flag", ["--timeout", "--deadline"])
def test_non_finite_seconds_are_refused(
    flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = fails(capsys, *run(f"{flag}={value}"))
    assert line.startswith(f"error: argument {flag}: {value} is not a finite number")


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("timeout = inf", "timeout: Input should be a finite number"),
        ("[thresholds]\ngap = nan", "thresholds.gap: Input should be a finite number"),
        (
            "max_tokens = 100000000000000000000",
            "max_tokens: 100000000000000000000 is out of range; use 16 to 131072",
        ),
        ("timeout = 1e30", "timeout: Input should be less than or equal to 86400"),
    ],
)
def test_a_config_number_out_of_bounds_is_refused(
    setting: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "panel.toml"
    config.write_text(setting + "\n")
    line = fails(capsys, *run("--config", str(config)))
    assert line == f"error: {config}.{expected}"


def test_a_template_syntax_error_names_the_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "judge_system.md.jinja").write_text("You judge.\n\n{% if %}\n")
    line = fails(capsys, *run("--templates", str(tmp_path)))
    assert line.startswith(f"error: template {tmp_path / 'judge_system.md.jinja'} line 3: ")
    assert line.endswith("; fix the template")


def test_a_template_that_is_not_utf8_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "debater_opening.md.jinja").write_bytes(b"\xff\xfe{{ topic }}")
    line = fails(capsys, *run("--templates", str(tmp_path)))
    assert "debater_opening.md.jinja: not UTF-8 text" in line


@pytest.mark.parametrize("what", ["--config", "--topics"])
def test_a_toml_file_that_is_not_utf8_is_bad_input(
    what: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "f.toml"
    bad.write_bytes(b"\xff\xfe = 1\n")
    line = fails(capsys, *run(what, str(bad)))
    assert str(bad) in line and "not UTF-8 text" in line


@pytest.mark.parametrize("flag", ["--cache", "--store"])
def test_a_folder_as_a_database_path_is_bad_input(
    flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = ["--no-store"] if flag == "--cache" else []
    line = fails(capsys, *run("--out", str(tmp_path / "o"), *extra, flag, str(tmp_path)))
    assert str(tmp_path) in line and "folder" in line
    assert not (tmp_path / "o" / "result.json").exists()


@pytest.mark.parametrize("command", [["audit"], ["leaderboard"]])
def test_a_store_that_is_not_a_database_is_bad_input(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "store.sqlite"
    bad.write_bytes(b"\xff" * 200)
    line = fails(capsys, *command, "--store", str(bad))
    assert line.startswith(f"error: run store {bad}: cannot open it (file is not a database)")


def test_a_transcript_no_judge_can_read_is_refused_naming_the_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(EXAMPLE.read_text())
    data["cross_examinations"] = data["closings"] = []
    data["arguments"] = [
        {"id": f"{side}-{n}", "claim": "c", "reasoning": "r", "evidence": "e"}
        for side in ("PRO", "CON")
        for n in range(1, 2001)
    ]
    bad = tmp_path / "t.json"
    bad.write_text(json.dumps(data))
    line = fails(capsys, "judge", str(bad), "--model", "scripted", "--quiet")
    assert "2000 PRO arguments" in line and "at most 50 a side" in line


def test_agreement_bootstrap_is_bounded(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    ratings = tmp_path / "r.csv"
    ratings.write_text("1,2,3\n1,2,4\n")
    line = fails(capsys, "agreement", str(ratings), "--bootstrap", "1000000000")
    assert line.startswith("error: argument --bootstrap: 1000000000 is above 100000")


# --- the reasons the inputs of issue 28 are refused with ----------------------------------


def test_an_argument_that_is_not_utf8_is_named_with_its_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "o"
    line = fails(capsys, "run", "caf\udce9?", "--model", "scripted", "--out", str(out))
    assert line == "error: argument 2: 'caf\\xe9?' is not UTF-8 text; give it in UTF-8"
    line = fails(capsys, *run(f"--out={out}\udcff"))
    assert line.startswith("error: --out: ") and "\\xff' is not UTF-8 text" in line
    assert main([*run("--out", f"{out}\udcff"), "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert (error["kind"], error["field"]) == ("configuration", "--out")
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_text_that_is_not_unicode_names_its_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(EXAMPLE.read_text())
    data["closings"][0]["statement"] = "fine, then \udce9"
    bad = tmp_path / "t.json"
    bad.write_text(json.dumps(data))  # written escaped: "\udce9"
    line = fails(capsys, "judge", str(bad), "--model", "scripted", "--out", str(tmp_path / "o"))
    assert line == (
        f"error: transcript {bad}: closings.0.statement: not Unicode text (a lone surrogate "
        "\\udce9 at character 11); send the text as UTF-8"
    )
    assert not (tmp_path / "o").exists()


def test_nesting_and_long_numbers_name_the_file_and_the_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = tmp_path / "c.toml"
    deep.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    line = fails(capsys, *run("--config", str(deep)))
    assert line.startswith(f"error: config file {deep}: nested too deeply to read (TOML is read")
    rows = tmp_path / "s.jsonl"
    rows.write_text('{"item": "q", "option": "a", "judge": "j", "dimension": "d", "score": 3}\n')
    rows.write_text(rows.read_text().replace("3}", "1" * 5000 + "}"))
    line = fails(capsys, "decide", str(rows), "--scale", "1-5")
    assert (
        line
        == f"error: {rows} line 1: a number has more than 4300 digits; write it with fewer digits"
    )


def test_a_scale_is_refused_for_its_own_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = tmp_path / "s.csv"
    table.write_text("item,option,judge,dimension,score\nq,a,j,d,3\nq,b,j,d,1\n")
    for scale, reason in [
        ("1-1e308", "scale 1-1e+308 spans too far: rescaling a score onto 1-10 would overflow"),
        ("1-" + "9" * 400, "scale 1-inf has a bound too large for a number"),
        ("5-1", "scale high 1.0 must exceed low 5.0"),
        ("a-b", "scale 'a-b' is not LOW-HIGH"),
    ]:
        assert fails(capsys, "decide", str(table), "--scale", scale).startswith(
            f"error: --scale: {reason}"
        )
    assert main(["decide", str(table), "--scale", "0-1e3"]) == 0  # an exponent is a number
    capsys.readouterr()


def test_decide_out_a_folder_says_it_cannot_write_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = tmp_path / "s.csv"
    table.write_text("# scale: 1-5\nitem,option,judge,dimension,score\nq,a,j,d,3\nq,b,j,d,1\n")
    line = fails(capsys, "decide", str(table), "--out", str(tmp_path))
    assert line == (
        f"error: decisions file {tmp_path}: cannot write it (it is a folder); give the path of "
        "a file"
    )


def test_thresholds_and_topic_weights_out_of_their_domain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[thresholds]\ngap = -1.0\n")
    line = fails(capsys, *run("--config", str(config)))
    assert line == f"error: {config}.thresholds.gap: Input should be greater than or equal to 0"
    topics = tmp_path / "t.toml"
    topics.write_text("[default.weights]\ntechnical = nan\n")
    line = fails(capsys, *run("--topics", str(topics)))
    assert line == (
        f"error: {topics}: default.weights.technical is nan; give a finite non-negative "
        "number (a role's domain weight, e.g. 0.25)"
    )


def test_serve_refuses_a_database_url_without_repeating_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = fails(capsys, "serve", "--database", "mysql://ann:hunter2@db:5432/jobs")
    assert line == (
        "error: --database: a mysql:// URL; give a postgresql:// URL "
        "(postgresql://user@host:5432/db) or the path of a SQLite file, e.g. "
        "debate-service.sqlite"
    )
    # A PostgreSQL URL is served; one that cannot be reached is refused with its password hidden.
    line = fails(capsys, "serve", "--database", "postgresql://ann:hunter2@127.0.0.1:1/jobs")
    assert line.startswith("error: --database: cannot connect to postgresql://ann:***@127.0.0.1:1/")
    assert line.endswith("; check the host, port, database name and credentials")
    assert "hunter2" not in line
