"""The public API: everything the README and the examples use comes from ``debate`` itself."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import debate
from tests.support import ROOT


def test_every_exported_name_resolves() -> None:
    missing = [name for name in debate.__all__ if not hasattr(debate, name)]
    assert missing == []


def test_council_and_backends_are_exported() -> None:
    from debate import LocalModel, OpenAIModel, run_council

    assert OpenAIModel.__module__ == "debate.models.openai"
    assert LocalModel.__module__ == "debate.models.local"
    assert callable(run_council)


def test_import_debate_does_not_load_the_heavy_backends() -> None:
    code = (
        "import sys, debate; "
        "print('llama_cpp' in sys.modules, 'debate.models.local' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def _imports(source: str) -> list[str]:
    modules = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            modules.append(node.module)
        elif isinstance(node, ast.Import):
            modules.extend(alias.name for alias in node.names)
    return [m for m in modules if m == "debate" or m.startswith("debate.")]


def test_examples_import_only_from_debate() -> None:
    sources = {p.name: p.read_text() for p in (ROOT / "examples").glob("*.py")}
    for nb in (ROOT / "examples").glob("*.ipynb"):
        cells = json.loads(nb.read_text())["cells"]
        sources[nb.name] = "\n".join(
            "".join(c["source"]) for c in cells if c["cell_type"] == "code"
        )
    assert sources, "no examples found"
    for name, source in sources.items():
        assert set(_imports(source)) <= {"debate"}, name


def test_load_transcript_refuses_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    latin = tmp_path / "t.json"
    latin.write_bytes(b'{"topic": "caf\xe9"}')
    with pytest.raises(debate.ConfigurationError, match=r"t\.json: not UTF-8 text \(byte 14"):
        debate.load_transcript(latin)


@pytest.mark.parametrize("seed", [-1, 2**32])
def test_a_seed_out_of_range_is_refused_before_any_call(seed: int) -> None:
    calls: list[object] = []
    model = debate.FunctionModel(lambda messages, schema: calls.append(schema) or "{}")
    with pytest.raises(debate.ConfigurationError, match=rf"^seed: {seed} is out of range"):
        debate.run_debate_sync("Should we adopt four-day weeks?", model=model, seed=seed)
    candidates = [debate.Candidate(id="a", text="A."), debate.Candidate(id="b", text="B.")]
    with pytest.raises(debate.ConfigurationError, match=rf"^seed: {seed} is out of range"):
        debate.run_council_sync("Which plan?", candidates, model=model, seed=seed)
    assert calls == []
