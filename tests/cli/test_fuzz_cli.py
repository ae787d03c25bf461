"""The fuzz table of ``tests/support/fuzz_cli.py``, in process: every bad input is refused cleanly.

Each case goes through :func:`debate._cli.main.main` in this process (with a time limit),
and must end with exit 2 and exactly one line on stderr: no traceback, no hang, no
multi-line message and no bad input accepted; a case marked ``untouched`` must also leave
nothing behind (no output folder, cache or database). ``python tests/support/fuzz_cli.py`` runs the
same table in subprocesses and prints the counts.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.support.fuzz_cli import KINDS, Case, all_cases, classify, prepared, run_in_process

CASES = all_cases()
LIMIT = 20.0  # seconds per case; a refused input takes milliseconds


def test_the_table_covers_every_subcommand_with_many_kinds_of_bad_input() -> None:
    from debate._cli.main import NAMES

    counts = Counter(case.command for case in CASES)
    assert set(counts) == set(NAMES)
    assert len(CASES) >= 197
    labels = [case.label for case in CASES]
    for kind in ("nan", "inf", "non-UTF-8", "folder", "syntax error", "'..'", "bad JSON"):
        assert any(kind in label for label in labels), kind


@pytest.mark.parametrize(
    ("code", "err", "kind"),
    [
        (None, "", "hang"),
        (1, "Traceback (most recent call last):\n  ...\nValueError: x\n", "traceback"),
        (-2, "", "traceback"),
        (0, "", "accepted"),
        (2, "usage: debate\nerror: bad\n", "multi-line"),
        (1, "failed: [Errno 17] File exists\n", "wrong-exit"),
        (2, "error: --seed: -1 is out of range\n", "clean"),
    ],
)
def test_classify(code: int | None, err: str, kind: str) -> None:
    assert kind in KINDS
    assert classify(code, err) == kind


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.command}: {c.label}")
def test_bad_input_is_refused_in_one_line(case: Case, tmp_path: Path) -> None:
    kind, err = run_in_process(case, tmp_path, LIMIT)
    assert kind == "clean", err
    assert err.startswith("error: "), err
    if case.untouched:
        left = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")}
        assert left == prepared(case), sorted(left - prepared(case))


def test_the_untouched_cases_cover_every_input_that_once_left_files_or_a_traceback() -> None:
    labels = {case.label for case in CASES if case.untouched}
    for label in (
        "topic not UTF-8",
        "--out ''",
        "config nested 5,000 deep",
        "nested 200,000 arrays deep",
        "topic a lone surrogate",
        "a 5,000-digit score",
        "--topics weight nan",
        "--database a folder",
        "--database a PostgreSQL URL",
        "missing API key",
        "config thresholds.gap = -1.0",
        "--templates include outside the search path (..)",
    ):
        assert label in labels, label
