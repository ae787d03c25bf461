from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from debate._cli.main import main
from debate.records import DebateResult
from tests.support import ROOT
from tests.support.helpers import served
from tests.support.openai_server import FakeOpenAIServer

EXAMPLE = ROOT / "examples" / "meeting_transcript.json"
TOPIC = "Should a small startup adopt a microservices architecture from day one?"


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_run_against_openai_compatible_server_writes_valid_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(seed=3) as server:
        code, out, err = run_cli(
            capsys,
            "run",
            TOPIC,
            "--model",
            "test-model",
            "--base-url",
            server.base_url,
            "--api-key-env",
            "",
            "--out",
            str(tmp_path),
            "--seed",
            "11",
        )
    assert code == 0, err
    result = DebateResult.model_validate_json((tmp_path / "result.json").read_text())
    assert result.topic == TOPIC
    assert len(result.transcript.arguments) == 6
    assert [e.status for e in result.evaluations] == ["scored"] * 4
    assert result.usage.calls == 10 == len(server.records)
    assert result.decision.outcome in {"winner", "too_close", "irreconcilable"}
    assert "Decision:" in out and str(tmp_path / "result.json") in out
    # one progress line per step on stderr: 2 openings, 2 cross-exams, 2 closings, 4 judges
    assert len([line for line in err.splitlines() if line.startswith("[")]) == 10
    # the result's transcript is a valid input to `debate judge`
    (tmp_path / "t.json").write_text(result.transcript.model_dump_json())
    with FakeOpenAIServer(seed=4) as server:
        code, _, err = run_cli(
            capsys,
            "judge",
            str(tmp_path / "t.json"),
            *served(server),
            "--out",
            str(tmp_path / "again"),
            "--quiet",
        )
    assert code == 0, err


def test_json_output_is_the_result(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        capsys, "run", TOPIC, "--model", "scripted", "--out", str(tmp_path), "--json", "--quiet"
    )
    assert code == 0
    printed = DebateResult.model_validate_json(out)
    assert printed == DebateResult.model_validate_json((tmp_path / "result.json").read_text())


def test_judge_hand_written_transcript(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOpenAIServer(seed=5) as server:
        code, out, err = run_cli(
            capsys,
            "judge",
            str(EXAMPLE),
            *served(server),
            "--out",
            str(tmp_path),
            "--quiet",
        )
        assert len(server.records) == 4  # judges only: nobody debates
    assert code == 0, err
    result = DebateResult.model_validate_json((tmp_path / "result.json").read_text())
    assert result.transcript.argument_ids == ["PRO-1", "PRO-2", "CON-1", "CON-2"]
    assert all(
        set(e.scores or {}) == set(result.transcript.argument_ids) for e in result.evaluations
    )


def test_judge_refuses_duplicated_argument_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(EXAMPLE.read_text())
    data["arguments"][1]["id"] = "PRO-1"
    bad = tmp_path / "dup.json"
    bad.write_text(json.dumps(data))
    code, _, err = run_cli(capsys, "judge", str(bad), "--model", "scripted", "--quiet")
    assert code == 2
    assert "PRO-1 appears twice" in err
    assert len(err.strip().splitlines()) == 1


def test_missing_api_key_for_remote_url_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(
        capsys,
        "run",
        TOPIC,
        "--model",
        "gpt-4o",
        "--base-url",
        "https://api.example.com/v1",
        "--quiet",
    )
    assert code == 2
    assert "OPENAI_API_KEY" in err and len(err.strip().splitlines()) == 1


def test_api_key_env_names_another_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_KEY", "sk-test-sentinel-0123456789")
    with FakeOpenAIServer() as server:
        code, out, err = run_cli(
            capsys,
            "judge",
            str(EXAMPLE),
            *served(server),
            "--api-key-env",
            "MY_KEY",
            "--out",
            str(tmp_path),
            "--quiet",
        )
        assert set(server.authorizations) == {"Bearer sk-test-sentinel-0123456789"}
    assert code == 0, err
    assert "sentinel" not in (tmp_path / "result.json").read_text() + out + err


def test_wall_time_of_a_debate_is_four_round_trips(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Reports the wall time; the performance bound itself lives in the benchmarks."""
    with FakeOpenAIServer(latency=0.2) as server:
        start = time.perf_counter()
        code, _, err = run_cli(
            capsys,
            "run",
            TOPIC,
            *served(server),
            "--out",
            str(tmp_path),
            "--quiet",
        )
        wall = time.perf_counter() - start
    assert code == 0, err
    print(f"default debate against a 200 ms server: {wall:.2f} s, {len(server.records)} calls")


def test_summary_states_the_interval_level_and_the_margin_in_points(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "panel.toml"
    config.write_text("[thresholds]\nconfidence = 0.9\n")
    code, out, err = run_cli(
        capsys, "run", TOPIC, "--model", "scripted", "--config", str(config),
        "--out", str(tmp_path), "--seed", "5", "--no-store",
    )  # fmt: skip
    assert code == 0, err
    vote = DebateResult.model_validate_json((tmp_path / "result.json").read_text()).vote
    assert vote.confidence == 0.9 and vote.margin_ci is not None
    assert vote.margin_points is not None and vote.margin_points_ci is not None
    low, high = vote.margin_points_ci
    assert f"90% CI [{vote.margin_ci[0]:+.3f}, {vote.margin_ci[1]:+.3f}]" in out
    assert (
        f"points of the 1-10 scale: {vote.margin_points:+.2f}, 90% CI [{low:+.2f}, {high:+.2f}]"
        in out
    )
    assert "95%" not in out
