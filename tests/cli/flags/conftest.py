"""Fixtures of the flag tests: the harness, and a spy on the results calibrate's panel reached."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from debate.quality import _benchmark
from debate.records import DebateResult
from tests.cli.flags.harness import Harness


@pytest.fixture
def h(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Harness:
    return Harness(tmp_path, capsys)


@pytest.fixture
def spied_debates(monkeypatch: pytest.MonkeyPatch) -> list[DebateResult]:
    """The results calibrate's panel reached (its report keeps no vote or evaluation)."""
    seen: list[DebateResult] = []
    real = _benchmark.judge_transcript

    async def spy(*args: Any, **kwargs: Any) -> DebateResult:
        result = await real(*args, **kwargs)
        seen.append(result)
        return result

    monkeypatch.setattr(_benchmark, "judge_transcript", spy)
    return seen
