"""PandaLM as judgments tables: two recorded judges and three people on 999 answer pairs.

Usage: python examples/datasets/pandalm.py ../shared/datasets/pandalm OUTDIR

Writes ``OUTDIR/judgments.csv`` (verdict rows of gpt-3.5-turbo and pandalm-7b, from
``baseline_judges/``) and ``OUTDIR/labels.csv`` (verdict rows of annotator1..3, from
``testset-v1.json``). item = the test set's ``idx``; A = response 1 is better, B =
response 2, tie = neither. The published codes are mapped here, once: ``'1'``/1 -> A,
``'2'``/2 -> B, ``'Tie'``/0 -> tie. GPT-3.5 also answered ``'garbage'`` on some items: that
is no verdict, so the row is left out (never filled in) and the count is printed.

The package ships this script's output in ``debate/data/examples/pandalm/``: ``debate example
pandalm --out DIR`` writes it without the data set (a test checks the two are the same).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

from debate.judgments import write_judgments

JUDGES = {
    "gpt-3.5-turbo": ("gpt-3.5-turbo-testset-v1.json", "gpt_result"),
    "pandalm-7b": ("pandalm-7b-testset-v1.json", "pandalm_result"),
}
VERDICTS = {"1": "A", "2": "B", "0": "tie", "tie": "tie"}
ANNOTATORS = ("annotator1", "annotator2", "annotator3")


def verdict(value: object) -> str | None:
    """A published code as A/B/tie; None for anything that is no verdict (``garbage``)."""
    return VERDICTS.get(str(value).strip().lower())


def judge_rows(folder: Path, left_out: dict[str, int]) -> Iterator[dict[str, object]]:
    for judge, (name, key) in JUDGES.items():
        rows = json.loads((folder / "baseline_judges" / name).read_text(encoding="utf-8"))
        for row in rows:
            call = verdict(row[key])
            if call is None:
                left_out[judge] = left_out.get(judge, 0) + 1
                continue
            yield {"item": str(row["idx"]), "judge": judge, "verdict": call}


def label_rows(items: list[dict[str, object]]) -> Iterator[dict[str, object]]:
    for item in items:
        for person in ANNOTATORS:
            call = verdict(item[person])
            if call is None:
                raise SystemExit(f"item {item['idx']}: {person} {item[person]!r} is no label")
            yield {"item": str(item["idx"]), "judge": person, "verdict": call}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    folder, out = Path(argv[0]), Path(argv[1])
    items = json.loads((folder / "testset-v1.json").read_text(encoding="utf-8"))
    left_out: dict[str, int] = {}
    rows = list(judge_rows(folder, left_out))
    path = write_judgments(out / "judgments.csv", rows, scale=None)
    labels = write_judgments(out / "labels.csv", label_rows(items), scale=None)
    judged = {r["item"] for r in rows}
    print(f"{path}: {len(judged)} items, {len(rows)} rows, {len(JUDGES)} judges")
    for judge, count in left_out.items():
        print(f"  left out {count} {judge} outputs that are no verdict (e.g. 'garbage')")
    print(f"{labels}: {len(items)} items, {len(items) * len(ANNOTATORS)} rows, 3 people")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
