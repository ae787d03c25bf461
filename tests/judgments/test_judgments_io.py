"""The judgments table on disk: malformed files, kinds, scales, round trips, converters."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from debate._cli.main import main
from debate.exceptions import ConfigurationError
from debate.judgments import read_judgment_rows, read_judgments, table_rows, write_judgments
from debate.records import NO_CALL, Scale, ScoreTable, VerdictTable
from tests.cli.test_calibrate_cli import GOOD, prefers_the_good_answer
from tests.support import ROOT
from tests.support.openai_server import FakeOpenAIServer

DATASETS = ROOT.parent / "shared" / "datasets"
HEAD = "item,option,judge,dimension,score\n"
ROW = "i1,a,j1,logic,3\n"

# (file name, content, line named, column named, words the message holds)
MALFORMED = [
    ("s.csv", "# scale: 1-5\nitem,option,judge,score\n" + "i1,a,j1,3\n", 2, "dimension", "missing"),
    ("s.csv", "# scale: 1-5\n" + HEAD + ROW + ",a,j1,logic,3\n", 4, "item", "empty"),
    ("s.csv", "# scale: 1-5\n" + HEAD + ROW + "i1, ,j1,logic,3\n", 4, "option", "empty"),
    ("s.csv", "# scale: 1-5\n" + HEAD + "i1,a,j1,logic,x\n", 3, "score", "not a number"),
    ("s.csv", "# scale: 1-5\n" + HEAD + 'i1,a,j1,logic,"3,5"\n', 3, "score", "decimal"),
    ("s.csv", "# scale: 1-5\n" + HEAD + ROW + "i1,b,j1,logic,nan\n", 4, "score", "finite"),
    ("s.csv", "# scale: 1-5\n" + HEAD + ROW + "i1,b,j1,logic,7\n", 4, "score", "outside"),
    ("s.csv", "# scale: 1-5\n" + HEAD + ROW + "i2,a,j1,logic,2\n" + ROW, 5, "judge", "line 3"),
    (
        "s.csv",
        "# scale: 1-5\nitem,option,unit,judge,dimension,score\n"
        "i1,PRO,u1,j1,logic,3\ni1,CON,u1,j1,logic,4\n",
        4,
        "unit",
        "line 3",
    ),
    (
        "s.csv",
        "# scale: 1-5\nitem,option,judge,dimension,score,order\ni1,a,j1,logic,3,XY\n",
        3,
        "order",
        "AB",
    ),
    (
        "s.csv",
        "# scale: 1-5\nitem,option,judge,dimension,score,standing\ni1,a,j1,logic,3,WON\n",
        3,
        "standing",
        "UPHELD",
    ),
    ("s.csv", "# scale: 1-5\n" + HEAD + ROW + "i2,a,j1\n", 4, "dimension", "cells"),
    ("s.csv", "# scales 1-5\n" + HEAD + ROW, 1, "scale", "# scale: 1-5"),
    ("v.csv", "item,judge,verdict\ni1,j1,A\ni2,j1,1\n", 3, "verdict", "numeric"),
    ("v.csv", "item,judge,verdict\ni1,j1,A\ni2,j1,better\n", 3, "verdict", "tie"),
    ("v.csv", "item,judge,verdict\ni1,j1,A\ni1,j1,B\n", 3, "verdict", "line 2"),
    ("v.csv", "item,judge,verdict,score\ni1,j1,A,3\n", 1, "verdict", "not both"),
    ("v.csv", "item;judge;verdict\ni1;j1;A\n", 1, "score", "';'"),
    ("v.jsonl", '{"item": "1", "judge": "j", "verdict": "A"}\n[1, 2]\n', 2, "file", "object"),
    (
        "v.jsonl",
        '{"item": "1", "judge": "j", "verdict": "A"}\n{"judge": "k", "verdict": "B"}\n',
        2,
        "item",
        "missing",
    ),
    (
        "v.jsonl",
        '{"item": "1", "judge": "j", "verdict": "A"}\n{"item": true, "judge": "k", '
        '"verdict": "B"}\n',
        2,
        "item",
        "not a name",
    ),
    (
        "s.jsonl",
        '{"scale": "1-5"}\n{"item": 1, "option": "a", "judge": "j", "dimension": "d", '
        '"score": true}\n',
        2,
        "score",
        "not a score",
    ),
]


@pytest.mark.parametrize(("name", "content", "line", "column", "words"), MALFORMED)
def test_a_malformed_file_fails_in_one_line_naming_row_and_column(
    tmp_path: Path, name: str, content: str, line: int, column: str, words: str
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigurationError) as caught:
        read_judgments(path)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message
    assert f"line {line}" in message and words in message
    assert caught.value.field == column


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [
        ("t.txt", "x", "'.txt'"),
        ("e.csv", "\n\n", "empty"),
        ("h.csv", "item,judge,verdict\n\n", "no rows"),
        ("s.csv", HEAD + ROW, "declare the score scale"),
        ("u.csv", b"item,judge,verdict\ni\xff,j,A\n", "UTF-8"),
    ],
)
def test_whole_file_problems_are_one_line_errors(
    tmp_path: Path, name: str, content: str | bytes, words: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ConfigurationError, match=words) as caught:
        read_judgments(path)
    assert "\n" not in str(caught.value)


def test_kind_follows_the_columns_and_real_file_quirks_are_read(tmp_path: Path) -> None:
    verdicts = tmp_path / "v.csv"
    # a byte-order mark, CRLF, a capitalised header, lowercase and TIE verdicts, an extra
    # column, trailing empty lines and a row of empty cells
    text = "\ufeffItem,Judge,Verdict,Note\r\n1,j1,a,x\r\n1,j2,TIE,\r\n2,j1,B,\r\n,,,\r\n\r\n\r\n"
    verdicts.write_text(text, encoding="utf-8", newline="")
    table = read_judgments(verdicts)
    assert isinstance(table, VerdictTable)
    assert table.items == ("1", "2") and table.judges == ("j1", "j2")
    assert table.verdict.tolist() == [0, 2, 1] and table.ignored_columns == ("note",)
    scores = tmp_path / "s.jsonl"
    lines = [{"item": 7, "option": "a", "judge": "j", "dimension": "d", "score": 2}]
    lines.append({"item": "7", "option": "b", "judge": "j", "dimension": "d", "score": "4.5"})
    scores.write_text("".join(json.dumps(x) + "\n" for x in lines))
    table = read_judgments(scores, scale="1-5")
    assert isinstance(table, ScoreTable)
    assert table.items == ("7",), "the number 7 and the text 7 are one item"
    assert table.score.tolist() == [2.0, 4.5] and table.scale == Scale(low=1, high=5)


def test_scale_from_the_file_or_the_flag_and_a_conflict_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    path.write_text("# scale: 1-5\n" + HEAD + ROW)
    assert read_judgments(path).scale == Scale(low=1, high=5)  # type: ignore[union-attr]
    assert read_judgments(path, scale="1-5").rows == 1
    with pytest.raises(ConfigurationError, match="declares scale 1-5 but --scale says 1-10"):
        read_judgments(path, scale="1-10")
    path.write_text(HEAD + ROW)
    assert read_judgments(path, scale=Scale(low=0, high=4)).scale.high == 4  # type: ignore[union-attr]
    with pytest.raises(ConfigurationError, match="--scale"):
        read_judgments(path, scale="five")


def three_option_rows() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for item in ("q1", "q2"):
        for option in ("x", "y", "z"):
            for judge in ("j1", "j2"):
                for order in ("AB", "BA"):
                    score = 1 + (hash((item, option, judge, order)) % 40) / 4
                    rows.append(
                        {
                            "item": item,
                            "option": option,
                            "unit": f"{item}-{option}-u",
                            "judge": judge,
                            "dimension": "overall",
                            "score": score,
                            "order": order,
                            "standing": "UPHELD" if judge == "j1" else "",
                        }
                    )
    return rows


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_write_then_read_round_trips_a_table_exactly(tmp_path: Path, suffix: str) -> None:
    first = tmp_path / f"a{suffix}"
    write_judgments(first, three_option_rows(), scale="1-10.75")
    table = read_judgments(first)
    assert isinstance(table, ScoreTable)
    assert table.options == ("x", "y", "z") and len(table.units) == 6
    assert table.standing.tolist().count(NO_CALL) == table.rows // 2
    second = tmp_path / f"b{suffix}"
    write_judgments(second, table_rows(table), scale=table.scale)
    again = read_judgments(second)
    for name in ScoreTable.__dataclass_fields__:
        if name == "source":
            continue
        left, right = getattr(table, name), getattr(again, name)
        same = np.array_equal(left, right) if isinstance(left, np.ndarray) else left == right
        assert same, name
    verdicts = tmp_path / f"v{suffix}"
    write_judgments(
        verdicts, [{"item": 1, "judge": "p", "verdict": "tie", "order": "BA"}], scale=None
    )
    vt = read_judgments(verdicts)
    assert list(table_rows(vt)) == [{"item": "1", "judge": "p", "verdict": "tie", "order": "BA"}]


def test_a_plain_file_reads_as_the_csv_module_reads_it(tmp_path: Path) -> None:
    """Split at commas (no quote, no carriage return) or read by csv: the same table."""
    plain = tmp_path / "plain.csv"
    write_judgments(plain, three_option_rows(), scale="1-10.75")
    text = plain.read_text()
    assert '"' not in text and "\r" not in text
    lines = text.splitlines()
    lines.insert(5, "")  # a blank line, dropped by both readers
    quoted = tmp_path / "quoted.csv"  # one quoted cell: the csv module reads the file
    quoted.write_text("\r\n".join(lines).replace(",x,", ',"x",', 1) + "\r\n")
    plain.write_text("\n".join(lines))  # no newline after the last row
    left, right = read_judgments(plain), read_judgments(quoted)
    for name in ScoreTable.__dataclass_fields__:
        if name != "source":
            a, b = getattr(left, name), getattr(right, name)
            assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b, name


def run_example(*argv: str) -> str:
    done = subprocess.run(
        [sys.executable, *argv],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def tiny_hanna(folder: Path) -> None:
    folder.mkdir()
    judges = [f"{m}_p{k}" for m in ("A", "B") for k in (1, 2)]
    header = ["story_id", "system", "criterion", "human_1", "human_2", "human_3", "human_mean"]
    with (folder / "hanna_long.csv").open("w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle, lineterminator="\r\n")
        out.writerow(header + judges)
        for system_index, system in enumerate(["Human", "GPT-2"]):
            for prompt in range(3):
                for criterion in ("Relevance", "Coherence"):
                    llm = [3.5, -1.0 if prompt == 0 and system == "Human" else 2.0, 4.0, 5.0]
                    story = system_index * 96 + prompt
                    out.writerow([story, system, criterion, 1, 2, 3, 2.0, *llm])


def test_the_hanna_converter_on_a_tiny_file_shaped_like_the_real_one(tmp_path: Path) -> None:
    tiny_hanna(tmp_path / "hanna")
    out = run_example("examples/datasets/hanna.py", str(tmp_path / "hanna"), str(tmp_path / "o"))
    assert "3 items, 46 rows, 4 judges" in out and "left out 2 " in out  # 48 less two -1s
    table = read_judgments(tmp_path / "o" / "judgments.csv")
    assert isinstance(table, ScoreTable) and table.scale == Scale(low=1, high=5)
    assert table.items == ("0", "1", "2") and table.options == ("Human", "GPT-2")
    labels = read_judgments(tmp_path / "o" / "labels.csv")
    assert labels.judges == ("human_1", "human_2", "human_3") and labels.rows == 36


def test_the_pandalm_converter_on_tiny_files_shaped_like_the_real_ones(tmp_path: Path) -> None:
    folder = tmp_path / "pandalm"
    (folder / "baseline_judges").mkdir(parents=True)
    items = [
        {"idx": i, "annotator1": a, "annotator2": a, "annotator3": 0}
        for i, a in enumerate([1, 2, 0])
    ]
    (folder / "testset-v1.json").write_text(json.dumps(items))
    gpt = [{"idx": i, "gpt_result": r} for i, r in enumerate(["1", "garbage", "Tie"])]
    panda = [{"idx": i, "pandalm_result": r} for i, r in enumerate([2, 1, 0])]
    (folder / "baseline_judges" / "gpt-3.5-turbo-testset-v1.json").write_text(json.dumps(gpt))
    (folder / "baseline_judges" / "pandalm-7b-testset-v1.json").write_text(json.dumps(panda))
    out = run_example("examples/datasets/pandalm.py", str(folder), str(tmp_path / "o"))
    assert "3 items, 5 rows, 2 judges" in out and "left out 1 gpt-3.5-turbo" in out
    table = read_judgments(tmp_path / "o" / "judgments.csv")
    assert isinstance(table, VerdictTable)
    assert [r["verdict"] for r in table_rows(table)] == ["A", "tie", "B", "A", "tie"]
    labels = read_judgments(tmp_path / "o" / "labels.csv")
    assert labels.rows == 9 and [r["verdict"] for r in table_rows(labels)][:3] == ["A", "A", "tie"]


@pytest.mark.skipif(not DATASETS.exists(), reason="../shared/datasets is not beside the repo")
def test_the_real_data_sets_convert_to_the_published_shapes(tmp_path: Path) -> None:
    run_example("examples/datasets/hanna.py", str(DATASETS / "hanna"), str(tmp_path / "h"))
    hanna = read_judgments(tmp_path / "h" / "judgments.csv")
    assert isinstance(hanna, ScoreTable)
    shape = (len(hanna.items), len(hanna.options), len(hanna.judges), len(hanna.dimensions))
    assert shape == (96, 11, 20, 6)
    people = read_judgments(tmp_path / "h" / "labels.csv")
    assert people.rows == 96 * 11 * 6 * 3
    run_example("examples/datasets/pandalm.py", str(DATASETS / "pandalm"), str(tmp_path / "p"))
    assert len(read_judgments(tmp_path / "p" / "judgments.csv").items) == 999
    assert len(read_judgments(tmp_path / "p" / "labels.csv").items) == 999


def test_calibrate_writes_tidy_tables_that_read_back(tmp_path: Path) -> None:
    items = tmp_path / "items.jsonl"
    rows = [
        {"id": "1", "question": "Q1?", "a": GOOD, "b": "weak", "labels": ["a", "a", "b"]},
        {"id": "2", "question": "Q2?", "a": "weak", "b": GOOD, "labels": ["b", "tie", "b"]},
    ]
    items.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with FakeOpenAIServer(responder=prefers_the_good_answer) as server:
        argv = ["calibrate", str(items), "--model", "m", "--base-url", server.base_url]
        argv += ["--api-key-env", "", "--out", str(tmp_path / "out"), "--no-store"]
        assert main(argv) == 0
    table = read_judgments(tmp_path / "out" / "judgments.csv")
    assert isinstance(table, ScoreTable) and table.scale == Scale(low=1, high=10)
    assert table.items == ("1", "2") and table.options == ("a", "b")
    assert len(table.judges) == 4 and len(table.dimensions) == 5
    assert table.rows == 2 * 4 * 2 * 5  # items x reviewers x options x dimensions
    good = [r for r in table_rows(table) if (r["item"], r["option"]) in {("1", "a"), ("2", "b")}]
    assert {r["score"] for r in good} == {9.0}
    labels = read_judgments(tmp_path / "out" / "labels.csv")
    assert [r["verdict"] for r in table_rows(labels)] == ["A", "A", "B", "B", "tie", "B"]
    assert labels.judges == ("person_1", "person_2", "person_3")


def test_calibrate_on_debates_writes_units_sides_and_standings(tmp_path: Path) -> None:
    from tests.support.helpers import transcript

    items = tmp_path / "verdicts.jsonl"
    lines = [
        {"id": f"d{i}", "transcript": transcript(topic=f"Item {i}?").model_dump(), "verdict": v}
        for i, v in enumerate(["PRO", "CON"])
    ]
    items.write_text("".join(json.dumps(line) + "\n" for line in lines))
    argv = ["calibrate", str(items), "--format", "debate", "--model", "scripted", "--no-store"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 0
    table = read_judgments(tmp_path / "out" / "judgments.csv")
    assert isinstance(table, ScoreTable)
    assert set(table.options) == {"PRO", "CON"} and table.standings
    assert table.dimensions == ("logic", "evidence", "responsiveness", "honesty")
    assert len(table.units) > len(table.options)  # argument ids, each under one side
    labels = read_judgments(tmp_path / "out" / "labels.csv")
    assert [r["verdict"] for r in table_rows(labels)] == ["A", "B"]


JSONL_MALFORMED = [case for case in MALFORMED if case[0].endswith(".jsonl")]


@pytest.mark.parametrize(("name", "content", "line", "column", "words"), JSONL_MALFORMED)
def test_rows_sent_as_objects_fail_as_the_same_lines_of_a_file(
    name: str, content: str, line: int, column: str, words: str
) -> None:
    """A service's rows are a file's lines: the same message, named ``rows line N``."""
    objects = [json.loads(text) for text in content.splitlines() if text.strip()]
    with pytest.raises(ConfigurationError) as caught:
        read_judgment_rows(objects)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("rows")
    assert f"line {line}" in message and words in message
    assert caught.value.field == column


def test_rows_sent_as_objects_read_as_a_file_would() -> None:
    rows = [
        {"item": "i1", "judge": "j1", "verdict": "A"},
        {"item": "i1", "judge": "j1", "verdict": "B"},
    ]
    duplicate = r"^rows line 2, column verdict: duplicate of line 1"
    with pytest.raises(ConfigurationError, match=duplicate):
        read_judgment_rows(rows)  # a judge's second call on the item: the file's message
    with pytest.raises(ConfigurationError, match="no rows"):
        read_judgment_rows([])
    scored = [{"item": "i1", "option": o, "judge": "j", "dimension": "d", "score": s}
              for o, s in (("a", 4), ("b", 2))]  # fmt: skip
    table = read_judgment_rows(scored, scale="1-5")
    assert isinstance(table, ScoreTable) and table.rows == 2 and table.source == "rows"
