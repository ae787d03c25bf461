"""Shipped panel presets: each is a valid panel, ``debate panels`` shows and prints them,
``--panel`` runs them, and a preset's judges reach their own endpoints with their own keys.

The routing test runs the presets as shipped except for their servers: each endpoint's
``base_url`` is pointed at its own test server on 127.0.0.1 (the file's text is edited, as
a user edits a printed preset), and every key variable holds a key of its own.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

import debate
from debate._cli.main import main
from debate.records import DEFAULT_ENDPOINT, DebateResult, RunConfig, load_config
from debate.runtime._presets import (
    EMBEDDED,
    UNKNOWN_FAMILY,
    PanelPreset,
    describe_preset,
    model_family,
    preset_names,
    preset_text,
)
from tests.cli.flags.harness import MODEL_COMMANDS, Harness, Run, results
from tests.support import ROOT
from tests.support.openai_server import FakeOpenAIServer

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

EXAMPLE = ROOT / "examples" / "meeting_transcript.json"
NAMES = preset_names()
WITH_ENDPOINTS = [n for n in NAMES if debate.panel_preset(n).endpoints]


def test_the_promised_presets_are_shipped() -> None:
    assert {"cross-family", "local-only", "embedded", "openai-tiered"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_every_preset_is_a_panel_whose_judges_name_declared_endpoints(name: str) -> None:
    config = debate.panel_preset(name)
    assert isinstance(config, RunConfig)
    declared = set(config.endpoints)
    used = {j.endpoint for j in config.judges} | {config.pro_endpoint, config.con_endpoint}
    assert used - {None} <= declared
    assert declared <= used  # no endpoint declared for nobody (a key asked for nothing)
    for judge in config.judges:  # every model is one the family table knows
        assert model_family(judge.model or config.model) != UNKNOWN_FAMILY, judge
    assert describe_preset(name).description


def test_the_cross_family_presets_span_families_and_local_only_stays_local() -> None:
    cross, local = describe_preset("cross-family"), describe_preset("local-only")
    for preset in (cross, local):
        regular = [j for j in preset.judges if not j.standby]
        assert len(regular) == 4
        assert len({j.family for j in regular}) == 4  # four judges, four families
        assert {j.role for j in regular} == {"technical", "business", "risk", "general"}
    assert {j.endpoint for j in cross.judges} == {"openai", "anthropic", "together"}
    assert cross.needs.env == ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "TOGETHER_API_KEY"]
    assert "https://api.anthropic.com/v1/" in cross.needs.servers
    assert local.needs.env == []
    assert all(s.startswith("http://127.0.0.1:") for s in local.needs.servers)
    embedded = describe_preset("embedded")
    assert embedded.needs.env == [] and embedded.needs.servers == [EMBEDDED]


def test_model_family_reads_the_last_part_of_the_name() -> None:
    assert model_family("meta-llama/Llama-3.3-70B-Instruct-Turbo") == "Meta Llama"
    assert model_family("Qwen/Qwen2.5-7B-Instruct") == "Alibaba Qwen"
    assert model_family("claude-sonnet-4-5") == "Anthropic Claude"
    assert model_family("gemma3:12b") == "Google Gemma"
    assert model_family("my-finetune") == UNKNOWN_FAMILY


# --- debate panels ---------------------------------------------------------------------


def test_panels_lists_every_preset_with_its_judges_and_needs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["panels"]) == 0
    out = capsys.readouterr().out
    for name in NAMES:
        preset = describe_preset(name)
        assert f"{name}: {preset.description}" in out
        for judge in preset.judges:
            assert f"{judge.role}@{judge.model} ({judge.family}, {judge.endpoint})" in out
    assert "  keys: OPENAI_API_KEY, ANTHROPIC_API_KEY, TOGETHER_API_KEY\n" in out
    assert "  keys: none\n  servers: http://127.0.0.1:8000/v1, http://127.0.0.1:11434/v1\n" in out
    assert "spare: general@local (SmolLM2, default) [standby]" in out
    assert "technical-strong: technical@gpt-4.1 (OpenAI GPT, openai) [tier 2]" in out


def test_panels_json_is_the_list_of_presets(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["panels", "--json"]) == 0
    listed = [PanelPreset.model_validate(p) for p in json.loads(capsys.readouterr().out)]
    assert [p.name for p in listed] == NAMES
    assert listed == [describe_preset(n) for n in NAMES]


@pytest.mark.parametrize("name", NAMES)
def test_panels_name_prints_toml_that_loads_as_the_same_config(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["panels", name]) == 0
    printed = capsys.readouterr().out
    assert printed == preset_text(name)
    saved = tmp_path / "panel.toml"
    saved.write_text(printed, encoding="utf-8")
    assert load_config(saved) == debate.panel_preset(name)  # [preset] is taken out
    assert main(["panels", name, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record.pop("toml") == printed
    assert PanelPreset.model_validate(record) == describe_preset(name)


def test_an_unknown_preset_is_usage_error_naming_the_known_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["panels", "cross-familly"]) == 2
    err = capsys.readouterr().err
    assert "'cross-familly'" in err and all(n in err for n in NAMES)
    argv = ["judge", str(EXAMPLE), "--panel", "nope", "--json", "--no-store"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["error"]["field"] == "--panel"
    assert all(n in err for n in NAMES)


def test_a_bad_preset_table_in_a_config_is_refused_naming_the_key(tmp_path: Path) -> None:
    saved = tmp_path / "panel.toml"
    saved.write_text('[preset]\ndescription = "mine"\nneeds = ["X"]\n')
    with pytest.raises(debate.ConfigurationError, match=r"preset\.needs"):
        load_config(saved)
    saved.write_text("preset = 3\n")
    with pytest.raises(debate.ConfigurationError, match="not a table"):
        load_config(saved)


def test_panel_and_config_together_are_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "panel.toml"
    config.write_text("arguments = 2\n")
    out = tmp_path / "out"
    argv = ["judge", str(EXAMPLE), "--panel", "embedded", "--config", str(config)]
    assert main([*argv, "--out", str(out), "--no-store", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--panel: give --panel embedded or --config" in err
    assert "debate panels embedded > panel.toml" in err
    assert not (out / "result.json").exists()


# --- --panel on every command that takes a panel ---------------------------------------


def configured_judges(command: str, run: Run) -> list[str]:
    """The judges (reviewers) the command's output says its panel had, standbys included."""
    if command == "council":
        return [j["name"] for j in run.file("result.json")["config"]["judges"]]
    if command == "calibrate":
        return [r["judge"] for r in run.file("calibration.json")["rows"] if r["judge"] != "panel"]
    (first, *_) = results(command, run)
    return [j.name for j in first.config.judges]


@pytest.fixture
def h(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Harness:
    """Every panel command against a fresh test server (as in tests/cli/flags/)."""
    return Harness(tmp_path, capsys)


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_panel_runs_the_preset(command: str, h: Harness) -> None:
    """``--panel embedded`` is the preset's panel (a standby ``spare`` besides the four
    roles), served where ``--model``/``--base-url`` say since its judges name no model."""
    plain, preset = h.run(command), h.run(command, "--panel", "embedded")
    assert plain.code == preset.code == 0, preset.err
    roles = ["technical", "business", "risk", "general"]
    assert configured_judges(command, plain) == roles
    assert configured_judges(command, preset) == [*roles, "spare"]
    assert preset.records and {r.body["model"] for r in preset.records} == {"m"}


def test_serve_takes_panel(monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    import debate.service._app as app_module

    made: list[Any] = []
    monkeypatch.setattr(app_module, "create_app", lambda *a, **k: made.append(a) or "app")
    monkeypatch.setattr(uvicorn, "run", lambda app, **k: None)
    monkeypatch.delenv("DEBATE_SERVICE_TOKENS", raising=False)
    assert main(["serve", "--panel", "embedded", "--model", "scripted"]) == 0
    config = made[0][1]
    assert [j.name for j in config.judges][-1] == "spare" and config.model == "scripted"


def test_mcp_takes_panel(monkeypatch: pytest.MonkeyPatch) -> None:
    import debate.service._mcp as mcp_module

    built: list[RunConfig] = []
    monkeypatch.setattr(mcp_module, "build_server", lambda config, **k: built.append(config))
    monkeypatch.setattr(mcp_module, "serve", lambda *a: None)
    assert main(["mcp", "--panel", "local-only"]) == 0
    assert built == [debate.panel_preset("local-only")]


# --- a preset's judges reach their own endpoints with their own keys --------------------


def redirected(name: str, urls: dict[str, str]) -> str:
    """The preset's text with each endpoint's base_url set to ``urls[endpoint]``."""
    lines = [ln for ln in preset_text(name).splitlines() if not ln.startswith("base_url =")]
    text = "\n".join(lines) + "\n"
    for endpoint, url in urls.items():
        header = f"[endpoints.{endpoint}]\n"
        assert text.count(header) == 1
        text = text.replace(header, f'{header}base_url = "{url}"\n')
    return text


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """A key of its own in every key variable any preset names."""
    names = {
        e.api_key_env
        for n in NAMES
        for e in debate.panel_preset(n).endpoints.values()
        if e.api_key_env
    }
    values = {name: f"key-of-{name.lower()}" for name in names}
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    yield values


@pytest.mark.parametrize("name", WITH_ENDPOINTS)
def test_each_judge_of_a_preset_reaches_its_own_endpoint_with_its_own_key(
    name: str, keys: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shipped = debate.panel_preset(name)
    with ExitStack() as stack:
        servers = {
            e: stack.enter_context(FakeOpenAIServer(seed=i))
            for i, e in enumerate(shipped.endpoints)
        }
        panel = tmp_path / "panel.toml"
        panel.write_text(redirected(name, {e: s.base_url for e, s in servers.items()}))
        out = tmp_path / "out"
        argv = ["judge", str(EXAMPLE), "--config", str(panel), "--out", str(out)]
        code = main([*argv, "--no-store", "--no-cache", "--quiet"])
    assert code == 0, capsys.readouterr().err
    result = DebateResult.model_validate_json((out / "result.json").read_text())
    assert load_config(panel).model_copy(update={"endpoints": shipped.endpoints}) == shipped
    for endpoint, server in servers.items():
        spec = shipped.endpoints[endpoint]
        mine = {j.model or shipped.model for j in shipped.judges if j.endpoint == endpoint}
        asked = {
            j.model or shipped.model
            for j in shipped.judges
            if j.endpoint == endpoint and j.name in {e.judge for e in result.evaluations}
        }
        seen = {r.body["model"] for r in server.records}
        assert asked <= seen <= mine, endpoint  # its judges' models, and only theirs
        expected = f"Bearer {keys[spec.api_key_env]}" if spec.api_key_env else ""
        assert set(server.authorizations) <= {expected}, endpoint
        others = {v for k, v in keys.items() if k != spec.api_key_env}
        assert not any(o in a for o in others for a in server.authorizations)
    by_judge = {(c.actor, c.endpoint) for c in result.usage.per_call if c.phase == "judge"}
    declared = {(j.name, j.endpoint or DEFAULT_ENDPOINT) for j in shipped.judges}
    assert by_judge and by_judge <= declared
    tier_one = {j.name for j in shipped.judges if j.tier == 1 and not j.standby}
    assert tier_one <= {actor for actor, _ in by_judge}  # every tier-1 judge was asked


def test_redirected_replaces_every_base_url() -> None:
    text = redirected("cross-family", {"openai": "A", "anthropic": "B", "together": "C"})
    endpoints = tomllib.loads(text)["endpoints"]
    assert {k: v["base_url"] for k, v in endpoints.items()} == {
        "openai": "A",
        "anthropic": "B",
        "together": "C",
    }
    assert not re.search(r"api\.(anthropic|together|openai)", text.split("[preset]")[1])


def test_the_docs_show_what_debate_panels_prints(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["panels"]) == 0
    printed = capsys.readouterr().out
    page = ROOT / "docs" / "guides" / "configuration.md"
    text = page.read_text(encoding="utf-8")
    assert f"$ debate panels\n{printed}```" in text
    shown = text.split("`debate panels cross-family` prints", 1)[1].split("```toml\n")[1]
    shown_toml = tomllib.loads(shown.split("```")[0])
    assert shown_toml == tomllib.loads(preset_text("cross-family"))
