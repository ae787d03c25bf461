"""Shards of a batch, each run on its own machine, merged are the batch one process gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from debate._cli.main import main
from debate.batch._shards import shard_of
from tests.support.batch_helpers import argv, results, same_reply, write_batch
from tests.support.openai_server import FakeOpenAIServer


def test_shards_merged_are_the_unsharded_batch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = write_batch(tmp_path, 7)
    with FakeOpenAIServer(responder=same_reply) as server:
        assert main(argv(batch, server, tmp_path / "all")) == 0
        for k in (1, 2):
            assert main(argv(batch, server, tmp_path / f"s{k}", "--shard", f"{k}/2")) == 0
    mine = {k: [r["id"] for r in results(tmp_path / f"s{k}")] for k in (1, 2)}
    assert all(shard_of(i, 2) == k for k in (1, 2) for i in mine[k])
    assert mine[1] and mine[2] and sorted(mine[1] + mine[2]) == [f"d{i}" for i in range(7)]
    capsys.readouterr()
    merged = tmp_path / "merged"
    folders = [str(tmp_path / "s2"), str(tmp_path / "s1")]
    assert main(["merge", *folders, "--out", str(merged)]) == 0
    assert "7 of 7 items ok" in capsys.readouterr().out
    assert results(merged) == results(tmp_path / "all")
    summary = [json.loads(line) for line in (merged / "summary.jsonl").read_text().splitlines()]
    assert all((merged / s["report"]).is_file() for s in summary)
    assert (merged / "d0" / "result.json").is_file()
    # one shard alone, or one twice, is refused in one line
    assert main(["merge", str(tmp_path / "s1"), "--out", str(tmp_path / "m2")]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: merge: shard 2/2 is missing; give its --out folder too"
    )
    assert main(["merge", *folders, folders[0], "--out", str(tmp_path / "m3")]) == 2
    assert "are both shard 2/2; give each shard once" in capsys.readouterr().err


def test_a_folder_holds_one_shard(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    batch = write_batch(tmp_path, 3)
    with FakeOpenAIServer(responder=same_reply) as server:
        assert main(argv(batch, server, tmp_path / "s", "--shard", "1/2")) == 0
        capsys.readouterr()
        assert main(argv(batch, server, tmp_path / "s", "--shard", "2/2")) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --shard: ") and "holds shard 1/2 of this batch file" in err


def test_merge_json_prints_the_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    batch = write_batch(tmp_path, 3)
    with FakeOpenAIServer(responder=same_reply) as server:
        for k in (1, 2):
            assert main(argv(batch, server, tmp_path / f"s{k}", "--shard", f"{k}/2")) == 0
    capsys.readouterr()
    folders = [str(tmp_path / "s1"), str(tmp_path / "s2")]
    assert main(["merge", *folders, "--out", str(tmp_path / "m"), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["items"] == 3 and printed["ok"] == 3
    assert [line["id"] for line in printed["lines"]] == ["d0", "d1", "d2"]
