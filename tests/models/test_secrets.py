"""The API key never reaches results, transcripts, logs, cache rows, errors or --json output."""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path
from typing import Any

import pytest

from debate._cli.main import main
from debate.models.test import fill_schema
from tests.support.helpers import served
from tests.support.openai_server import FakeOpenAIServer, Reply

SENTINEL = "sk-test-SENTINEL-0123456789-not-a-real-key"


def test_api_key_never_leaks(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    count = {"n": 0}

    def responder(body: dict[str, Any]) -> Reply:
        count["n"] += 1
        if count["n"] % 4 == 1:
            return Reply(status=500)
        if count["n"] % 4 == 2:
            return Reply(content="{broken")
        schema = body["response_format"]["json_schema"]["schema"]
        return Reply(content=json.dumps(fill_schema(schema, random.Random(count["n"]))))

    caplog.set_level(logging.DEBUG)
    outputs = []
    with FakeOpenAIServer(responder=responder) as server:
        for extra in ([], ["--json"]):
            code = main(
                [
                    "run",
                    "Should we adopt the plan?",
                    *served(server),
                    "--api-key-env",
                    "OPENAI_API_KEY",
                    "--out",
                    str(tmp_path / "out"),
                    "--no-cache",
                    *extra,
                ]
            )
            out, err = capsys.readouterr()
            outputs += [out, err]
            assert code in (0, 1)
        # a failing run: every reply broken, so errors and exceptions are produced too
        server.responder = lambda body: Reply(content="{broken")
        code = main(
            [
                "run",
                "Should we adopt the plan?",
                *served(server),
                "--api-key-env",
                "OPENAI_API_KEY",
                "--out",
                str(tmp_path / "fail"),
                "--cache",
                str(tmp_path / "cache.sqlite"),
            ]
        )
        out, err = capsys.readouterr()
        outputs += [out, err]
        assert code == 1 and "could not produce" in err
        assert set(server.authorizations) == {f"Bearer {SENTINEL}"}  # the key was used
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "result.json" for p in files)
    assert any(p.name == "cache.sqlite" for p in files)
    for path in files:
        assert SENTINEL.encode() not in path.read_bytes(), path
    for text in outputs:
        assert SENTINEL not in text
    assert caplog.records
    for record in caplog.records:
        assert SENTINEL not in record.getMessage()
        assert SENTINEL not in repr(record.args)
