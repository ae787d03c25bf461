"""Cost in every command's result: the price table applied to the usage it records."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from debate._cli.main import main
from debate.records import data_toml
from debate.runtime import PriceTable
from tests.support.helpers import transcript
from tests.support.openai_server import FakeOpenAIServer

PRICES = "[models.scripted]\nprompt = 3.0\ncompletion = 7.0\ncached = 0.5\n"
RATES = {"prompt": 3.0, "completion": 7.0, "cached": 0.5}


def priced(per_call: list[dict[str, Any]], rates: dict[str, float]) -> float:
    """The cost of the recorded calls, worked out here rather than by the package."""
    cached = rates.get("cached", rates["prompt"])
    return (
        sum(
            (c["prompt_tokens"] - c["cached_tokens"]) * rates["prompt"]
            + c["cached_tokens"] * cached
            + c["completion_tokens"] * rates["completion"]
            for c in per_call
        )
        / 1e6
    )


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


@pytest.fixture
def prices(tmp_path: Path) -> str:
    path = tmp_path / "prices.toml"
    path.write_text(PRICES)
    return str(path)


def check_cost(usage: dict[str, Any]) -> None:
    assert usage["per_call"], "no calls were recorded"
    assert sum(c["attempts"] for c in usage["per_call"]) == usage["calls"]
    assert usage["cost_usd"] == pytest.approx(priced(usage["per_call"], RATES), abs=1e-6)
    assert usage["cost_usd"] > 0


def test_run_and_judge_results_are_priced_by_the_given_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], prices: str
) -> None:
    flags = ["--model", "scripted", "--quiet", "--no-store", "--prices", prices, "--json"]
    run = json.loads(cli(capsys, "run", "Should we?", *flags, "--out", str(tmp_path / "r")))
    check_cost(run["usage"])
    assert {c["phase"] for c in run["usage"]["per_call"]} >= {"opening", "closing", "judge"}
    path = tmp_path / "t.json"
    path.write_text(transcript().model_dump_json())
    judged = json.loads(cli(capsys, "judge", str(path), *flags, "--out", str(tmp_path / "j")))
    check_cost(judged["usage"])
    assert {c["phase"] for c in judged["usage"]["per_call"]} == {"judge"}
    cost = f"<th>cost</th><td>${judged['usage']['cost_usd']:.4f}</td>"
    assert cost in (tmp_path / "j" / "report.html").read_text()


def test_council_result_is_priced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], prices: str
) -> None:
    candidates = tmp_path / "c.jsonl"
    candidates.write_text('{"id": "a", "text": "Use Postgres."}\n{"id": "b", "text": "Use S3."}\n')
    out = cli(
        capsys,
        *("council", "Which store?", "--candidates", str(candidates), "--model", "scripted"),
        *("--quiet", "--no-store", "--prices", prices, "--json", "--out", str(tmp_path)),
    )
    usage = json.loads(out)["usage"]
    check_cost(usage)
    assert {c["phase"] for c in usage["per_call"]} == {"council"}


def test_calibration_report_is_priced_over_every_item(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], prices: str
) -> None:
    items = tmp_path / "v.jsonl"
    lines = [
        {"id": f"d{i}", "transcript": transcript(topic=f"Item {i}?").model_dump(), "verdict": v}
        for i, v in enumerate(["PRO", "CON"])
    ]
    items.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = cli(
        capsys,
        *("calibrate", str(items), "--format", "debate", "--model", "scripted", "--quiet"),
        *("--no-store", "--prices", prices, "--json", "--out", str(tmp_path)),
    )
    usage = json.loads(out)["usage"]
    check_cost(usage)
    assert len(usage["per_call"]) == 2 * 4  # two items, four judges each


def test_batch_items_are_priced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], prices: str
) -> None:
    path = tmp_path / "b.jsonl"
    path.write_text('{"id": "x", "topic": "Should we?"}\n')
    out = cli(
        capsys,
        *("batch", str(path), "--model", "scripted", "--quiet", "--no-store"),
        *("--prices", prices, "--out", str(tmp_path / "o")),
    )
    usage = json.loads((tmp_path / "o" / "x" / "result.json").read_text())["usage"]
    check_cost(usage)
    line = json.loads((tmp_path / "o" / "results.jsonl").read_text())
    assert line["cost_usd"] == usage["cost_usd"]
    assert f"cost ${usage['cost_usd']:.4f}" in out


def test_shipped_table_is_dated_sourced_and_finite() -> None:
    table = PriceTable.default()
    assert table.taken and table.source and table.source.startswith("https://")
    assert "gpt-4o-mini" in table.models
    raw = data_toml("prices.toml")
    assert set(raw["models"]) == set(table.models)
    for price in table.models.values():
        values = [price.prompt, price.completion, price.cached or 0.0]
        assert all(math.isfinite(v) and v >= 0 for v in values)
    assert "scripted" not in table.models  # a test double is priced only by a table that says so


def test_shipped_table_prices_a_run_when_no_table_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.json"
    path.write_text(transcript().model_dump_json())
    with FakeOpenAIServer() as server:
        out = cli(
            capsys,
            *(
                "judge",
                str(path),
                "--model",
                "gpt-4o-mini",
                "--base-url",
                server.base_url,
                "--api-key-env",
                "",
            ),
            *("--quiet", "--no-store", "--json", "--out", str(tmp_path)),
        )
    usage = json.loads(out)["usage"]
    shipped = PriceTable.default().models["gpt-4o-mini"]
    rates = {"prompt": shipped.prompt, "completion": shipped.completion}
    rates["cached"] = shipped.cached if shipped.cached is not None else shipped.prompt
    assert usage["cost_usd"] == pytest.approx(priced(usage["per_call"], rates), abs=1e-6)
    assert usage["cost_usd"] > 0


def test_a_model_missing_from_the_table_is_not_priced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = cli(
        capsys,
        *("run", "Should we?", "--model", "scripted", "--quiet", "--no-store", "--json"),
        *("--out", str(tmp_path)),
    )
    assert json.loads(out)["usage"]["cost_usd"] is None
    assert "<th>cost</th><td>not priced</td>" in (tmp_path / "report.html").read_text()


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[models.scripted]\nprompt = inf\ncompletion = 1.0\n", "models.scripted.prompt"),
        ("[models.scripted]\nprompt = nan\ncompletion = 1.0\n", "models.scripted.prompt"),
        ("[models.scripted]\nprompt = 1.0\ncompletion = -2.0\n", "models.scripted.completion"),
        ("[models.scripted]\nprompt = 1.0\n", "models.scripted.completion"),
        ("[models.scripted]\nprompt = 1.0\ncompletion = 1\ncached = inf\n", "cached"),
        ("[models.scripted]\nprompt = 1.0\ncompletion = 1.0\nextra = 1\n", "extra"),
        ("[models.scripted\nprompt = 1.0\n", "not valid TOML"),
    ],
)
def test_bad_price_tables_are_one_line_errors_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, named: str
) -> None:
    path = tmp_path / "prices.toml"
    path.write_text(text)
    out = tmp_path / "out"
    for command in (
        ["run", "Should we?"],
        ["council", "Q?", "--generate", "scripted-a,scripted-b"],
    ):
        argv = [*command, "--model", "scripted", "--prices", str(path), "--out", str(out)]
        code = main([*argv, "--quiet"])
        _, err = capsys.readouterr()
        assert code == 2
        assert len(err.strip().splitlines()) == 1, err
        assert f"price table {path}" in err and named in err
    assert not out.exists()  # refused before any work


def test_a_missing_price_file_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.toml"
    code = main(["council", "Q?", "--generate", "scripted-a,scripted-b", "--prices", str(missing)])
    _, err = capsys.readouterr()
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "nope.toml" in err and "cannot read" in err
