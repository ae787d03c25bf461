"""The flag tests' harness: every command's inputs, a run against a fresh test server, and
readers of what it wrote (shared by the per-command files and tests/runtime/test_presets.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from debate._cli.main import main
from debate.records import DebateResult
from tests.support import ROOT
from tests.support.helpers import RESPONSE, review_reply, transcript
from tests.support.openai_server import FakeOpenAIServer, Record, Reply

PROMPTS = ROOT / "prompts"
TOPIC = "Should a small startup adopt a microservices architecture from day one?"
MARKER = "MARKER-17D-TEMPLATE"
MODEL_COMMANDS = ("run", "judge", "council", "batch", "calibrate")
DEBATE_COMMANDS = ("run", "judge", "batch", "calibrate")
"""Commands whose judges read a debate (calibrate with ``--format debate``)."""
READING_FLAGS = (
    "--topics",
    "--topic-type",
    "--topic-classifier",
    "--presentation",
    "--swap",
    "--samples",
)
READING_VALUES = {
    "--samples": ["2"],
    "--topics": ["topics.toml"],
    "--topic-type": ["security"],
    "--topic-classifier": ["model"],
    "--presentation": ["fixed"],
}


@dataclass
class Run:
    """One command's run: exit code, output, the folder it wrote and what the server saw."""

    code: int
    out: str
    err: str
    folder: Path
    records: list[Record]
    authorizations: list[str]

    def file(self, name: str) -> Any:
        return json.loads((self.folder / name).read_text())

    @property
    def judge_requests(self) -> list[Record]:
        """Requests of judges (rubric scores) and council reviewers, not debaters."""
        return [r for r in self.records if is_review(r.body)]


def is_review(body: dict[str, Any]) -> bool:
    schema = json.dumps(body.get("response_format", {}))
    return '"scores"' in schema or '"evaluations"' in schema


def other(n: int) -> Any:
    """The n-th of several different one-argument-a-side debates."""
    return transcript(1, 1, topic=f"Should we adopt plan {n}?")


class Harness:
    """Inputs for every command, and ``run``: the command against a fresh test server."""

    def __init__(self, tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.tmp = tmp
        self.capsys = capsys
        self.count = 0
        debate = transcript(1, 1)
        self.transcript = tmp / "transcript.json"
        self.transcript.write_text(debate.model_dump_json())
        self.candidates = tmp / "candidates.jsonl"
        self.candidates.write_text(
            '{"id": "x", "text": "Use Postgres."}\n{"id": "y", "text": "Use SQLite."}\n'
        )
        self.batch = tmp / "batch.jsonl"
        self.batch.write_text(  # two debates: the second cannot replay the first's calls
            "".join(
                json.dumps({"id": f"i{n}", "transcript": other(n).model_dump(mode="json")}) + "\n"
                for n in (1, 2)
            )
        )
        self.items = tmp / "debates.jsonl"
        self.items.write_text(
            "".join(
                json.dumps(
                    {
                        "id": f"d{n}",
                        "transcript": other(n).model_dump(mode="json"),
                        "verdict": "PRO",
                    }
                )
                + "\n"
                for n in (1, 2)
            )
        )
        self.pairs = tmp / "pairs.jsonl"
        self.pairs.write_text(
            json.dumps({"id": "p1", "question": "Q?", "a": "yes", "b": "no", "labels": ["a"]})
            + "\n"
        )

    def base(self, command: str) -> list[str]:
        return {
            "run": ["run", TOPIC, "--arguments", "1", "--rounds", "0"],
            "judge": ["judge", str(self.transcript)],
            "council": ["council", "Which database?", "--candidates", str(self.candidates)],
            "batch": ["batch", str(self.batch)],
            "calibrate": ["calibrate", str(self.items), "--format", "debate", "--limit", "1"],
        }[command]

    def folder(self) -> Path:
        self.count += 1
        return self.tmp / f"out{self.count}"

    def run(
        self,
        command: str,
        *extra: str,
        server: FakeOpenAIServer | None = None,
        model: str | None = "m",
        argv: list[str] | None = None,
        out: Path | None = None,
    ) -> Run:
        """``command`` with its base arguments (or ``argv``), served by ``server`` (or a new
        one), writing to a new folder (or ``out``)."""
        own = server is None
        fake = serving() if server is None else server
        folder = out or self.folder()
        # keyless unless ``extra`` names a key variable (the last --api-key-env wins)
        flags = (
            ["--model", model, "--base-url", fake.base_url, "--api-key-env", ""] if model else []
        )
        before = len(fake.records)
        if own:
            fake.__enter__()
        try:
            code = main([*(argv or self.base(command)), *flags, "--out", str(folder), *extra])
        finally:
            if own:
                fake.__exit__(None, None, None)
        out_text, err = self.capsys.readouterr()
        return Run(code, out_text, err, folder, fake.records[before:], list(fake.authorizations))


def serving(*, hang_reviews: float = 0.0, invalid_reviews: bool = False) -> FakeOpenAIServer:
    """A test server whose replies are valid the first time (council reviews included, which
    the server's random filling sometimes gets wrong), unless told otherwise.

    Args:
        hang_reviews: Judges and reviewers answer after this many seconds; debaters at once.
        invalid_reviews: Judges and reviewers never answer with valid JSON; debaters do.
    """
    server = FakeOpenAIServer()

    def respond(body: dict[str, Any]) -> Reply:
        review = is_review(body)
        if review and invalid_reviews:
            return Reply(content="not json at all")
        if '"evaluations"' in json.dumps(body["response_format"]):
            shown = RESPONSE.findall(body["messages"][1]["content"])
            content = review_reply({label: 5 + i for i, (label, _) in enumerate(shown)})
        else:
            content = json.dumps(server.valid(body))
        return Reply(content=content, hang=hang_reviews if review else 0.0)

    server.responder = respond
    return server


def results(command: str, run: Run) -> list[DebateResult]:
    """The debate results a run wrote (a batch: one per item)."""
    if command == "batch":
        paths = sorted(run.folder.glob("i*/result.json"))
    else:
        paths = [run.folder / "result.json"]
    return [DebateResult.model_validate_json(p.read_text()) for p in paths]


def names(command: str, run: Run) -> set[str]:
    """Names of the judges (council: reviewers) the run's output lists."""
    if command == "council":
        return {r["reviewer"] for r in run.file("result.json")["reviews"]}
    if command == "calibrate":
        return {r["judge"] for r in run.file("calibration.json")["rows"]} - {"panel"}
    return {e.judge for r in results(command, run) for e in r.evaluations}


def unscored(command: str, run: Run) -> list[str | None]:
    """The reason of every unscored judge or reviewer (calibrate: judges with no call)."""
    if command == "council":
        return [r["reason"] for r in run.file("result.json")["reviews"] if r["status"] != "scored"]
    if command == "calibrate":
        rows = run.file("calibration.json")["rows"]
        return ["no call" for r in rows if r["judge"] != "panel" and r["items"] == 0]
    return [e.reason for r in results(command, run) for e in r.evaluations if e.status != "scored"]


OUTPUT = {
    "run": "result.json",
    "judge": "result.json",
    "council": "result.json",
    "batch": "results.jsonl",
    "calibrate": "calibration.json",
}
JSON_KEY = {
    "run": "decision",
    "judge": "decision",
    "council": "rankings",
    "batch": "items",
    "calibrate": "rows",
}


def debate_results(command: str, run: Run, spied: list[DebateResult]) -> list[DebateResult]:
    return list(spied) if command == "calibrate" else results(command, run)
