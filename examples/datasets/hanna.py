"""HANNA as judgments tables: 20 LLM judges and three people on 1,056 stories x 6 criteria.

Usage: python examples/datasets/hanna.py ../shared/datasets/hanna OUTDIR

Reads ``hanna_long.csv`` (one row per story and criterion; see the data set's SOURCE.txt)
and writes ``OUTDIR/judgments.csv`` (the LLM judges) and ``OUTDIR/labels.csv`` (the
people), both score tables on the 1-5 scale:

* item = the WritingPrompts prompt (``story_id % 96``: story_id is system index * 96 +
  prompt index), so the eleven systems' stories for one prompt are the options of one item;
* option = the system that wrote the story;
* judge = ``<LLM>_p<k>`` (five LLMs x four prompt variants) or ``human_1..3``;
* dimension = the criterion (Relevance, Coherence, ...).

The LLM scores are means over sampled answers, and a failed answer entered that mean as
-1: a mean below 1 is therefore not a score on the 1-5 scale and its row is left out
(never filled in); the count is printed. A mean of 1 or more may still hide a failed
answer; that cannot be told from the file.
"""

from __future__ import annotations

import csv
import sys
from collections.abc import Iterator
from pathlib import Path

from debate.judgments import write_judgments

PROMPTS = 96
SCALE = "1-5"
LOW, HIGH = 1.0, 5.0
PEOPLE = ("human_1", "human_2", "human_3")


def read_rows(folder: Path) -> list[dict[str, str]]:
    with (folder / "hanna_long.csv").open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def judge_columns(header: list[str]) -> list[str]:
    """The LLM judges' columns: ``<LLM>_p<k>``."""
    return [c for c in header if "_p" in c and c.rsplit("_p", 1)[1].isdigit()]


def score_rows(
    rows: list[dict[str, str]], judges: list[str], left_out: list[int]
) -> Iterator[dict[str, object]]:
    for row in rows:
        for judge in judges:
            score = float(row[judge])
            if not LOW <= score <= HIGH:
                left_out[0] += 1
                continue
            yield {
                "item": str(int(row["story_id"]) % PROMPTS),
                "option": row["system"],
                "judge": judge,
                "dimension": row["criterion"],
                "score": score,
            }


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    folder, out = Path(argv[0]), Path(argv[1])
    rows = read_rows(folder)
    judges = judge_columns(list(rows[0]))
    left_out = [0]
    path = write_judgments(out / "judgments.csv", score_rows(rows, judges, left_out), scale=SCALE)
    labels = write_judgments(out / "labels.csv", score_rows(rows, list(PEOPLE), [0]), scale=SCALE)
    items = {int(r["story_id"]) % PROMPTS for r in rows}
    written = len(rows) * len(judges) - left_out[0]
    print(f"{path}: {len(items)} items, {written} rows, {len(judges)} judges")
    print(f"  left out {left_out[0]} judge scores below 1 (means that include a failed answer)")
    print(f"{labels}: {len(items)} items, {len(rows) * len(PEOPLE)} rows, {len(PEOPLE)} people")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
