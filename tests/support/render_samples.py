"""Sample reports from function-model judges, and their screenshots for the README.

One command regenerates everything (the screenshots need Debian's ``chromium``)::

    PYTHONPATH=$PWD python -m tests.support.render_samples samples/ --screenshots docs/

writes ``samples/{report,report-split,council}/report.{md,html}`` and, with ``--screenshots``,
``docs/report-1280.png``, ``docs/report-420.png``, ``docs/report-split-1280.png``,
``docs/report-split-420.png``, ``docs/council-1280.png`` and ``docs/council-420.png``. The judges'
scores are planted, so the pictures show every part of the report with known numbers.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from debate import FunctionModel, RunConfig, judge_transcript_sync
from debate.council import run_council_sync
from debate.models import Message
from debate.records import (
    Argument,
    Candidate,
    Closing,
    CouncilResult,
    CrossExamination,
    DebateResult,
    Transcript,
)
from debate.report import write_report
from tests.support.helpers import planted_judges, review_reply, shown_candidates

TOPIC = "Should a ten-person team adopt trunk-based development?"
CLAIMS = {
    "PRO-1": "Small daily merges cut integration conflicts",
    "PRO-2": "Feature flags let unfinished work ship dark",
    "PRO-3": "Faster feedback from one shared main branch",
    "CON-1": "Review quality drops under constant merging",
    "CON-2": "Flags pile up as hidden technical debt",
    "CON-3": "A slow CI pipeline blocks everyone at once",
}
FINDINGS = {
    "technical": "PRO-1 carries the debate: CON never answered the conflict data.",
    "business": "PRO-2's dark launches answer CON-2's debt worry only in part.",
    "risk": "CON-3 is real but fixable; it does not outweigh PRO-1.",
    "general": "PRO's case is concrete; CON's objections are mostly hypothetical.",
}
WINNER = {"PRO-1": 9, "PRO-2": 7, "PRO-3": 7, "CON-1": 5, "CON-2": 4, "CON-3": 6}
# Split: the risk judge reads the debate the other way round.
SPLIT_FINDING = "CON-2 decides it: unmanaged flags outweigh every PRO benefit."
SPLIT_TWIST = {"PRO-1": 3, "PRO-2": 4, "PRO-3": 6, "CON-1": 8, "CON-2": 9, "CON-3": 8}


def transcript() -> Transcript:
    """A six-argument debate with readable claims (and one hostile string, shown inert)."""
    args = [
        Argument(id=i, claim=c, reasoning="From the team's last two quarters.", evidence="DORA")
        for i, c in CLAIMS.items()
    ]
    cross = [
        CrossExamination(
            round=1,
            by="CON",
            target="PRO-1",
            challenge="<script>alert('conflicts')</script> Where is the data?",
            concession="",
            rebuttal="Merge-conflict counts fell from 41 to 9 a month.",
        )
    ]
    closings = [
        Closing(side="PRO", statement="Merge small, merge often."),
        Closing(side="CON", statement="Speed without review is risk."),
    ]
    return Transcript(topic=TOPIC, arguments=args, cross_examinations=cross, closings=closings)


def _with_findings(
    plan: Callable[[str, str], int], findings: dict[str, str]
) -> Callable[[list[Message], type[BaseModel]], str]:
    """Planted scores, each judge's key finding replaced by a readable one."""
    reply = planted_judges(plan)

    def answer(messages: list[Message], schema: type[BaseModel]) -> str:
        data = json.loads(reply(messages, schema))
        role = str(data["key_finding"]).split()[0]
        data["key_finding"] = findings.get(role, data["key_finding"])
        return json.dumps(data)

    return answer


def debate(split: bool) -> DebateResult:
    """A debate PRO wins, or one the risk judge splits."""

    def plan(role: str, arg_id: str) -> int:
        if split and role == "risk":
            return SPLIT_TWIST[arg_id]
        return max(1, min(10, WINNER[arg_id] + {"business": 1, "risk": -1}.get(role, 0)))

    findings = FINDINGS | ({"risk": SPLIT_FINDING} if split else {})
    model = FunctionModel(_with_findings(plan, findings))
    config = RunConfig(model="function", calibration="zscore" if split else "auto")  # type: ignore[arg-type]
    return judge_transcript_sync(transcript(), model=model, config=config, seed=7)


QUALITY = {"a": 8.0, "b": 7.0, "c": 4.0, "d": 5.0}
ANSWERS = [
    Candidate(id="A", text="Paris, on the Seine; capital since 987 (a)"),
    Candidate(id="B", text="Paris (b)"),
    Candidate(id="C", text="Lyon (c)"),
    Candidate(id="D", text="Marseille, France's oldest city and its largest port (d)"),
]


def _reviewer(offset: float, spread: float) -> Callable[[list[Message], type[BaseModel]], str]:
    def reply(messages: list[Message], schema: type[BaseModel]) -> str:
        scores: dict[str, int] = {}
        for label, body in shown_candidates(messages):
            quality = QUALITY[body.rsplit("(", 1)[1].rstrip(")")]
            scores[label] = int(max(1, min(10, round(offset + (quality - 6) * spread))))
        return review_reply(scores)

    return reply


def council() -> CouncilResult:
    """Four candidates, four reviewers of different harshness."""
    reviewers = {
        name: FunctionModel(_reviewer(offset, spread), name=name)
        for name, offset, spread in (
            ("harsh", 5.0, 1.0),
            ("lenient", 8.0, 0.6),
            ("strict", 6.0, 1.5),
            ("terse", 7.0, 0.8),
        )
    }
    return run_council_sync("What is the capital of France?", ANSWERS, reviewers=reviewers, seed=5)


WIDTHS = (1280, 420)
HEIGHTS = {("council", 1280): 1820, ("council", 420): 2360}
"""Screenshot heights that end with the page (a debate report is cut at 2400 px)."""


def screenshot(page: Path, png: Path, width: int, height: int = 2400) -> None:
    """The top ``height`` px of ``page`` at ``width`` px wide, taken by headless Chromium."""
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                f"--screenshot={png}",
                page.resolve().as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder for the sample reports")
    parser.add_argument("--screenshots", type=Path, help="folder for the PNG screenshots")
    parser.add_argument(
        "--height", type=int, help="how much of each page to capture (px; default 2400)"
    )
    args = parser.parse_args(argv)
    samples: dict[str, object] = {
        "report": debate(split=False),
        "report-split": debate(split=True),
        "council": council(),
    }
    for name, result in samples.items():
        _, html = write_report(result, args.out / name)
        print(html)
        if args.screenshots is not None:
            args.screenshots.mkdir(parents=True, exist_ok=True)
            for width in WIDTHS:
                png = args.screenshots / f"{name}-{width}.png"
                height = args.height or HEIGHTS.get((name, width), 2400)
                screenshot(html, png, width, height)
                print(png)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
