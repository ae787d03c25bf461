"""Every flag of every subcommand has an effect: one test per flag, per command.

Each test runs the real command (``debate._cli.main.main``) against an OpenAI-compatible
test server on 127.0.0.1 that logs every request, with and without the flag (or with two
values of it), and asserts on what differs: the requests the server received, the files
written, stdout, stderr or the exit code. Where the only observable is internal (a rate
limiter's waits, the embedded model's file), the test swaps in a recorder at the seam the
value goes through. docs/flags.md lists every flag and the test that shows its effect.

Flags owned by other parts of issue 17 (``--prices``, ``--max-cost``, ``--max-tokens``,
``--progress``, ``--fail-on``, ``--layout`` and the endpoint flags) are tested there.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from debate._cli.main import main
from debate.models.test import TestModel
from debate.panel._identity import identity
from debate.quality import _benchmark
from debate.quality._track import TrackRecords
from debate.records._result import DebateResult
from debate.runtime._prompts import PromptRenderer
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


@pytest.fixture
def h(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Harness:
    return Harness(tmp_path, capsys)


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


def debate_results(command: str, run: Run, spied: list[DebateResult]) -> list[DebateResult]:
    return list(spied) if command == "calibrate" else results(command, run)


# --- the model flags, on every command that calls models ------------------------------


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_model_names_the_model_in_every_request(command: str, h: Harness) -> None:
    first, second = h.run(command, model="model-one"), h.run(command, model="model-two")
    assert first.code == second.code == 0, first.err + second.err
    assert {r.body["model"] for r in first.records} == {"model-one"}
    assert {r.body["model"] for r in second.records} == {"model-two"}


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_base_url_sends_every_request_there(command: str, h: Harness) -> None:
    with serving() as a, serving() as b:
        run = h.run(command, server=b)
        assert run.code == 0, run.err
        assert a.records == [] and len(b.records) > 0


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_api_key_env_names_the_variable_the_key_is_read_from(
    command: str, h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLAG_TEST_KEY", "sk-flag-test")
    plain = h.run(command)
    named = h.run(command, "--api-key-env", "FLAG_TEST_KEY")
    assert plain.code == named.code == 0, named.err
    assert "Bearer sk-flag-test" not in plain.authorizations
    assert set(named.authorizations) == {"Bearer sk-flag-test"}


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_model_path_builds_the_embedded_model_from_that_file(
    command: str, h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file reaches the embedded backend, whose model then answers every call."""
    opened: list[str | None] = []

    def local_model(path: str | None, *, seed: int = 0) -> TestModel:
        opened.append(path)
        return TestModel(seed=seed, name="from-gguf")

    monkeypatch.setattr("debate.models.local.LocalModel", local_model)
    gguf = h.tmp / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    run = h.run(command, "--model-path", str(gguf), model=None)
    assert run.code == 0, run.err
    assert opened and set(opened) == {str(gguf)}
    if command == "council":
        assert {r["model"] for r in run.file("result.json")["reviews"]} == {"from-gguf"}
    elif command != "calibrate":
        assert {e.model for r in results(command, run) for e in r.evaluations} == {"from-gguf"}


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_a_missing_model_path_is_bad_input_before_any_call(command: str, h: Harness) -> None:
    """``batch --model-path`` used to be ignored: a missing file gave "1 of 1 ok"."""
    run = h.run(command, "--model-path", str(h.tmp / "missing.gguf"), model=None)
    assert run.code == 2 and "--model-path" in run.err and "not a file" in run.err
    assert not (run.folder / OUTPUT[command]).exists()


def test_model_path_and_base_url_together_are_refused(h: Harness) -> None:
    gguf = h.tmp / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    run = h.run("batch", "--model-path", str(gguf))
    assert run.code == 2 and "--model-path" in run.err and run.records == []


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_config_file_sets_the_panel(command: str, h: Harness) -> None:
    config = h.tmp / "panel.toml"
    config.write_text(
        '[[judges]]\nname = "alpha"\nrole = "technical"\n'
        "weights = {logic = 0.25, evidence = 0.25, responsiveness = 0.25, honesty = 0.25}\n"
        '[[judges]]\nname = "beta"\nrole = "risk"\n'
        "weights = {logic = 0.25, evidence = 0.25, responsiveness = 0.25, honesty = 0.25}\n"
    )
    plain, configured = h.run(command), h.run(command, "--config", str(config))
    assert plain.code == configured.code == 0, configured.err
    assert names(command, plain) == {"technical", "business", "risk", "general"}
    assert names(command, configured) == {"alpha", "beta"}
    assert len(configured.judge_requests) * 2 == len(plain.judge_requests)


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_judges_chooses_the_roles(command: str, h: Harness) -> None:
    run = h.run(command, "--judges", "technical,risk")
    assert run.code == 0, run.err
    assert names(command, run) == {"technical", "risk"}


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_templates_replace_the_shipped_prompts(command: str, h: Harness) -> None:
    folder = h.tmp / "templates"
    folder.mkdir()
    for name in ("judge_system.md.jinja", "council_system.md.jinja"):
        text = (PROMPTS / name).read_text()
        (folder / name).write_text(f"{text}\n{MARKER}\n")
    plain, custom = h.run(command), h.run(command, "--templates", str(folder))
    assert plain.code == custom.code == 0, custom.err
    assert not any(MARKER in r.system for r in plain.records)
    assert custom.judge_requests and all(MARKER in r.system for r in custom.judge_requests)


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_seed_is_sent_with_every_request(command: str, h: Harness) -> None:
    run = h.run(command, "--seed", "4242")
    assert run.code == 0, run.err
    assert run.records and {r.body.get("seed") for r in run.records} == {4242}


@pytest.fixture
def no_provider_retries(h: Harness) -> str:
    """A config without provider retries, so a timed-out call is not tried again."""
    path = h.tmp / "no-retries.toml"
    path.write_text("provider_retries = 0\n")
    return str(path)


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_timeout_bounds_each_call(command: str, h: Harness, no_provider_retries: str) -> None:
    with serving(hang_reviews=0.6) as server:
        patient = h.run(command, "--config", no_provider_retries, "--timeout", "30", server=server)
        hasty = h.run(command, "--config", no_provider_retries, "--timeout", "0.1", server=server)
    assert patient.code == hasty.code == 0, patient.err + hasty.err
    assert unscored(command, patient) == []
    reasons = unscored(command, hasty)
    assert reasons and set(reasons) <= {"timeout", "no call"}


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_deadline_leaves_late_judges_unscored(command: str, h: Harness) -> None:
    """Council included: a reviewer still working at the deadline is unscored (timeout)."""
    # a debate's budget also covers its debaters (answering at once, yet not instantly)
    hang, deadline = (2.0, "1") if command == "run" else (0.6, "0.2")
    with serving(hang_reviews=hang) as server:
        free = h.run(command, server=server)
        bounded = h.run(command, "--deadline", deadline, server=server)
    assert free.code == bounded.code == 0, free.err + bounded.err
    assert unscored(command, free) == []
    reasons = unscored(command, bounded)
    assert reasons and set(reasons) <= {"timeout", "no call"}
    if command == "council":
        details = [r["detail"] for r in bounded.file("result.json")["reviews"]]
        assert all(f"deadline of {deadline} s" in d for d in details)


def test_deadline_stops_a_debate_whose_debaters_are_late(h: Harness) -> None:
    with FakeOpenAIServer(latency=0.5) as server:
        run = h.run("run", "--deadline", "0.2", server=server)
    assert run.code == 1 and "deadline of 0.2 s" in run.err


def test_council_deadline_covers_the_generated_answers(h: Harness) -> None:
    argv = ["council", "Which database?", "--generate", "m1,m2"]
    with FakeOpenAIServer(latency=0.5) as server:
        run = h.run("council", "--deadline", "0.2", server=server, argv=argv)
    assert run.code == 1 and "deadline of 0.2 s" in run.err


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_max_retries_is_the_number_of_re_asks(command: str, h: Harness) -> None:
    with serving(invalid_reviews=True) as server:
        once = h.run(command, "--max-retries", "0", server=server)
        thrice = h.run(command, "--max-retries", "2", server=server)
    assert once.code == thrice.code == 0, once.err + thrice.err
    assert len(once.judge_requests) > 0
    assert len(thrice.judge_requests) == 3 * len(once.judge_requests)


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_cache_replays_completed_calls(command: str, h: Harness) -> None:
    cache = h.tmp / "shared-cache.sqlite"
    with serving() as server:  # same endpoint and seed: the same requests
        first = h.run(command, "--cache", str(cache), "--seed", "7", server=server)
        again = h.run(command, "--cache", str(cache), "--seed", "7", server=server)
    assert first.code == again.code == 0, first.err + again.err
    assert cache.is_file() and not (first.folder / "cache.sqlite").exists()
    assert len(first.records) > 0 and again.records == []


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_no_cache_calls_again_and_writes_no_cache(command: str, h: Harness) -> None:
    cached = h.run(command)
    out = h.folder()
    first = h.run(command, "--no-cache", out=out)
    again = h.run(command, "--no-cache", out=out)
    assert cached.code == first.code == again.code == 0, again.err
    assert (cached.folder / "cache.sqlite").is_file()
    assert not (out / "cache.sqlite").exists()
    if command != "batch":  # a batch skips items whose result.json is in --out already
        assert len(again.records) == len(first.records) > 0


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_out_is_where_the_output_goes(command: str, h: Harness) -> None:
    out = h.tmp / "chosen" / "folder"
    run = h.run(command, out=out)
    assert run.code == 0, run.err
    assert (out / OUTPUT[command]).is_file()


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_json_prints_machine_readable_output(command: str, h: Harness) -> None:
    plain, machine = h.run(command), h.run(command, "--json")
    assert plain.code == machine.code == 0, machine.err
    with pytest.raises(json.JSONDecodeError):
        json.loads(plain.out)
    assert JSON_KEY[command] in json.loads(machine.out)


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_quiet_silences_progress(command: str, h: Harness) -> None:
    plain, quiet = h.run(command), h.run(command, "--quiet")
    assert plain.code == quiet.code == 0, quiet.err
    assert plain.err.strip() and quiet.err == ""


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_store_chooses_the_run_store(command: str, h: Harness) -> None:
    default, chosen = h.tmp / "store.sqlite", h.tmp / "elsewhere" / "runs.sqlite"
    run = h.run(command, "--store", str(chosen))
    assert run.code == 0, run.err
    assert chosen.is_file() and not default.exists()


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_no_store_records_nothing(command: str, h: Harness) -> None:
    default = h.tmp / "store.sqlite"
    run = h.run(command, "--no-store")
    assert run.code == 0, run.err
    assert not default.exists()
    assert h.run(command).code == 0 and default.is_file()


@pytest.mark.parametrize("command", ["run", "judge", "batch"])
def test_no_store_still_weights_the_vote_by_track_records(command: str, h: Harness) -> None:
    """--no-store means "do not record this run"; it no longer switches the weights off."""
    first = h.run(command, "--judges", "technical,risk", "--seed", "1")
    weights = results(command, first)[0].vote.judge_weights
    # then technical is found wrong on every calibration item
    key = identity("technical", "m", PromptRenderer(None))
    TrackRecords(h.tmp / "store.sqlite").add(
        [(key, f"item{n}", "debate", "CON", "PRO") for n in range(20)]
    )
    for extra in ([], ["--no-store"]):
        run = h.run(command, "--judges", "technical,risk", "--seed", "1", *extra)
        assert run.code == 0, run.err
        weighted = results(command, run)[0].vote.judge_weights
        assert weighted["technical"] < weights["technical"]
        assert weighted["risk"] == pytest.approx(weights["risk"])


# --- how the judges read a debate: debate commands only -------------------------------


@pytest.fixture
def topics_file(h: Harness) -> str:
    path = h.tmp / "topics.toml"
    path.write_text(
        "[default.weights]\ntechnical = 0.25\nbusiness = 0.25\nrisk = 0.25\ngeneral = 0.25\n"
        '[zebra]\nkeywords = ["plan", "microservices"]\n'
        "[zebra.weights]\ntechnical = 0.7\nbusiness = 0.1\nrisk = 0.1\ngeneral = 0.1\n"
    )
    return str(path)


@pytest.mark.parametrize("command", DEBATE_COMMANDS)
def test_topics_replaces_the_topic_profiles(
    command: str, h: Harness, topics_file: str, spied_debates: list[DebateResult]
) -> None:
    run = h.run(command, "--topics", topics_file)
    assert run.code == 0, run.err
    found = debate_results(command, run, spied_debates)
    assert found and {r.vote.topic_type for r in found} == {"zebra"}


@pytest.mark.parametrize("command", DEBATE_COMMANDS)
def test_topic_type_sets_the_type(
    command: str, h: Harness, spied_debates: list[DebateResult]
) -> None:
    run = h.run(command, "--topic-type", "security")
    assert run.code == 0, run.err
    found = debate_results(command, run, spied_debates)
    assert found and {(r.vote.topic_type, r.vote.topic_source) for r in found} == {
        ("security", "config")
    }


@pytest.mark.parametrize("command", DEBATE_COMMANDS)
def test_topic_classifier_model_asks_a_model(
    command: str, h: Harness, spied_debates: list[DebateResult]
) -> None:
    plain = h.run(command)
    spied_debates.clear()
    asked = h.run(command, "--topic-classifier", "model")
    assert plain.code == asked.code == 0, asked.err
    found = debate_results(command, asked, spied_debates)
    assert found and {r.vote.topic_source for r in found} == {"model"}
    assert len(asked.records) > len(plain.records)


@pytest.mark.parametrize("command", DEBATE_COMMANDS)
def test_presentation_fixed_shows_pro_first_to_every_judge(
    command: str, h: Harness, spied_debates: list[DebateResult]
) -> None:
    plain = h.run(command, "--seed", "3")
    balanced = debate_results(command, plain, spied_debates)
    spied_debates.clear()
    fixed_run = h.run(command, "--seed", "3", "--presentation", "fixed")
    fixed = debate_results(command, fixed_run, spied_debates)
    assert plain.code == fixed_run.code == 0, fixed_run.err
    firsts = {e.positions["PRO-1"] for r in balanced for e in r.evaluations}
    assert firsts == {0, 1}  # counterbalanced: some judges read CON first
    assert {e.positions["PRO-1"] for r in fixed for e in r.evaluations} == {0}


@pytest.mark.parametrize("command", DEBATE_COMMANDS)
def test_swap_makes_every_judge_read_twice(
    command: str, h: Harness, spied_debates: list[DebateResult]
) -> None:
    plain = h.run(command)
    spied_debates.clear()
    swapped = h.run(command, "--swap")
    assert plain.code == swapped.code == 0, swapped.err
    assert len(swapped.judge_requests) == 2 * len(plain.judge_requests)
    found = debate_results(command, swapped, spied_debates)
    assert found and all(e.swap is not None for r in found for e in r.evaluations)


@pytest.mark.parametrize("command", DEBATE_COMMANDS)
def test_samples_makes_every_judge_read_k_times(
    command: str, h: Harness, spied_debates: list[DebateResult]
) -> None:
    plain = h.run(command)
    spied_debates.clear()
    sampled = h.run(command, "--samples", "3")
    assert plain.code == sampled.code == 0, sampled.err
    assert len(sampled.judge_requests) == 3 * len(plain.judge_requests)
    found = debate_results(command, sampled, spied_debates)
    assert found and all(
        e.readings is not None and len(e.readings) == 3 for r in found for e in r.evaluations
    )


@pytest.mark.parametrize("command", DEBATE_COMMANDS)
def test_aggregate_chooses_how_the_judges_margins_combine(
    command: str, h: Harness, spied_debates: list[DebateResult]
) -> None:
    plain = h.run(command, "--seed", "3")
    found = debate_results(command, plain, spied_debates)
    spied_debates.clear()
    median_run = h.run(command, "--seed", "3", "--aggregate", "median")
    median = debate_results(command, median_run, spied_debates)
    assert plain.code == median_run.code == 0, median_run.err
    assert found and {r.vote.aggregate for r in found} == {"weighted_mean"}
    assert median and {r.vote.aggregate for r in median} == {"median"}
    assert {r.decision.thresholds.aggregate for r in median} == {"median"}
    bad = h.run(command, "--aggregate", "mode")
    assert bad.code == 2 and "--aggregate" in bad.err


@pytest.mark.parametrize("command", DEBATE_COMMANDS)
def test_min_judges_sets_the_fewest_scored_judges(
    command: str, h: Harness, spied_debates: list[DebateResult]
) -> None:
    run = h.run(command, "--seed", "3", "--min-judges", "4")
    found = debate_results(command, run, spied_debates)
    assert run.code == 0, run.err
    assert found and {r.decision.thresholds.min_judges for r in found} == {4}
    too_many = h.run(command, "--min-judges", "9")
    assert too_many.code == 2 and too_many.err.startswith("error: --min-judges: 9 is more than")
    assert "\n" not in too_many.err.strip()
    too_few = h.run(command, "--min-judges", "1")
    assert too_few.code == 2 and too_few.err.startswith("error: --min-judges:")


@pytest.mark.parametrize("flag", READING_FLAGS)
def test_council_refuses_the_debate_reading_flags(flag: str, h: Harness) -> None:
    run = h.run("council", flag, *READING_VALUES.get(flag, []))
    assert run.code == 2 and "unrecognized arguments" in run.err and run.records == []


@pytest.mark.parametrize("flag", READING_FLAGS)
def test_pairwise_calibration_refuses_the_debate_reading_flags(
    flag: str, h: Harness, topics_file: str
) -> None:
    value = [topics_file] if flag == "--topics" else READING_VALUES.get(flag, [])
    argv = ["calibrate", str(h.pairs), "--format", "pairwise"]
    run = h.run("calibrate", flag, *value, argv=argv)
    assert run.code == 2 and run.err.startswith(f"error: {flag}:") and run.records == []


# --- run -------------------------------------------------------------------------------


def test_run_topic_is_debated(h: Harness) -> None:
    run = h.run("run", argv=["run", "Should we ship on Fridays?", "--arguments", "1"])
    assert run.code == 0, run.err
    assert results("run", run)[0].topic == "Should we ship on Fridays?"
    assert any("Should we ship on Fridays?" in r.user for r in run.records)


def test_run_arguments_sets_arguments_per_side(h: Harness) -> None:
    one = h.run("run", argv=["run", TOPIC, "--rounds", "0", "--arguments", "1"])
    two = h.run("run", argv=["run", TOPIC, "--rounds", "0", "--arguments", "2"])
    assert one.code == two.code == 0, two.err
    assert len(results("run", one)[0].transcript.arguments) == 2
    assert len(results("run", two)[0].transcript.arguments) == 4


def test_run_rounds_sets_cross_examination_rounds(h: Harness) -> None:
    none = h.run("run", argv=["run", TOPIC, "--arguments", "1", "--rounds", "0"])
    one = h.run("run", argv=["run", TOPIC, "--arguments", "1", "--rounds", "1"])
    assert none.code == one.code == 0, one.err
    assert results("run", none)[0].transcript.cross_examinations == []
    assert {c.round for c in results("run", one)[0].transcript.cross_examinations} == {1}


def test_judge_transcript_is_what_is_judged(h: Harness) -> None:
    other = h.tmp / "other.json"
    other.write_text(transcript(2, 1, topic="Should we hire?").model_dump_json())
    run = h.run("judge", argv=["judge", str(other)])
    assert run.code == 0, run.err
    result = results("judge", run)[0]
    assert result.topic == "Should we hire?" and len(result.transcript.arguments) == 3


# --- council ---------------------------------------------------------------------------


def test_council_question_and_candidates_reach_the_reviewers(h: Harness) -> None:
    run = h.run("council")
    assert run.code == 0, run.err
    result = run.file("result.json")
    assert {c["id"] for c in result["candidates"]} == {"x", "y"}
    asked = [r.body["messages"][1]["content"] for r in run.records]  # after it, any re-ask
    assert all("Which database?" in a and "Use SQLite." in a for a in asked)


def test_council_generate_asks_each_model_to_answer(h: Harness) -> None:
    argv = ["council", "Which database?", "--generate", "gen-a,gen-b"]
    run = h.run("council", argv=argv)
    assert run.code == 0, run.err
    answers = [r for r in run.records if not is_review(r.body)]
    assert sorted(r.body["model"] for r in answers) == ["gen-a", "gen-b"]
    assert {c["id"] for c in run.file("result.json")["candidates"]} == {"gen-a", "gen-b"}


def test_council_method_chooses_the_primary_ranking(h: Harness) -> None:
    plain, borda = h.run("council"), h.run("council", "--method", "borda")
    assert plain.file("result.json")["method"] == "normalized"
    assert borda.file("result.json")["method"] == "borda"


def test_council_safety_gate_asks_reviewers_about_safety(h: Harness) -> None:
    plain, gated = h.run("council"), h.run("council", "--safety-gate")
    assert plain.code == gated.code == 0, gated.err
    assert not any('"unsafe"' in json.dumps(r.body["response_format"]) for r in plain.records)
    assert all('"unsafe"' in json.dumps(r.body["response_format"]) for r in gated.records)


def test_council_category_is_recorded_for_the_leaderboard(
    h: Harness, capsys: pytest.CaptureFixture[str]
) -> None:
    # a fixed seed: for a few seeds the scripted placeholder writes no valid review
    argv = ["council", "Which database?", "--generate", "scripted-a,scripted-b", "--seed", "0"]
    run = h.run("council", "--category", "databases", argv=argv, model=None)
    assert run.code == 0, run.err
    assert main(["leaderboard", "--category", "databases", "--json"]) == 0
    assert {r["model"] for r in json.loads(capsys.readouterr().out)} == {
        "scripted-a",
        "scripted-b",
    }
    assert main(["leaderboard", "--category", "other", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


# --- leaderboard and audit ---------------------------------------------------------------


@pytest.fixture
def council_store(h: Harness) -> Path:
    store = h.tmp / "council-store.sqlite"
    # a fixed seed: for a few seeds the scripted placeholder writes no valid review
    argv = ["council", "Which database?", "--generate", "scripted-a,scripted-b", "--seed", "0"]
    run = h.run("council", "--store", str(store), "--category", "db", argv=argv, model=None)
    assert run.code == 0, run.err
    return store


def leaderboard(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["leaderboard", *argv])
    return code, capsys.readouterr().out


def test_leaderboard_store_reads_that_store(
    council_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert leaderboard(capsys) == (0, "no council results recorded yet\n")
    code, out = leaderboard(capsys, "--store", str(council_store))
    assert code == 0 and "scripted-a" in out and "scripted-b" in out


def test_leaderboard_since_drops_older_runs(
    council_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, recent = leaderboard(capsys, "--store", str(council_store), "--since", "1", "--json")
    _, none = leaderboard(capsys, "--store", str(council_store), "--since", "0", "--json")
    assert len(json.loads(recent)) == 2 and json.loads(none) == []


def test_leaderboard_category_filters(
    council_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, db = leaderboard(capsys, "--store", str(council_store), "--category", "db", "--json")
    _, other = leaderboard(capsys, "--store", str(council_store), "--category", "x", "--json")
    assert len(json.loads(db)) == 2 and json.loads(other) == []


def test_leaderboard_json_is_machine_readable(
    council_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, text = leaderboard(capsys, "--store", str(council_store))
    _, machine = leaderboard(capsys, "--store", str(council_store), "--json")
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    assert {r["model"] for r in json.loads(machine)} == {"scripted-a", "scripted-b"}


@pytest.fixture
def debate_store(h: Harness) -> Path:
    store = h.tmp / "debate-store.sqlite"
    assert h.run("judge", "--store", str(store)).code == 0
    return store


def test_audit_store_reads_that_store(
    debate_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit"]) == 0
    assert "(0 debate runs)" in capsys.readouterr().out
    assert main(["audit", "--store", str(debate_store)]) == 0
    assert f"store: {debate_store} (1 debate runs)" in capsys.readouterr().out


def test_audit_json_is_machine_readable(
    debate_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", "--store", str(debate_store), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"] == 1


# --- report ------------------------------------------------------------------------------


def test_report_result_and_out(h: Harness, capsys: pytest.CaptureFixture[str]) -> None:
    run = h.run("judge")
    assert main(["report", str(run.folder / "result.json")]) == 0
    assert capsys.readouterr().out.split() == [
        str(run.folder / "report.md"),
        str(run.folder / "report.html"),
    ]
    elsewhere = h.tmp / "reports"
    assert main(["report", str(run.folder / "result.json"), "--out", str(elsewhere)]) == 0
    capsys.readouterr()
    assert (elsewhere / "report.md").is_file() and (elsewhere / "report.html").is_file()


# --- batch -------------------------------------------------------------------------------


def test_batch_file_items_each_get_a_result(h: Harness) -> None:
    run = h.run("batch")
    assert run.code == 0, run.err
    lines = [json.loads(x) for x in (run.folder / "results.jsonl").read_text().splitlines()]
    assert [x["id"] for x in lines] == ["i1", "i2"]
    assert (run.folder / "i1" / "result.json").is_file()


def test_batch_concurrency_bounds_items_in_flight(h: Harness) -> None:
    with FakeOpenAIServer(latency=0.5) as one:
        assert h.run("batch", "--concurrency", "1", server=one).code == 0
    with FakeOpenAIServer(latency=0.5) as two:
        assert h.run("batch", "--concurrency", "2", server=two).code == 0
    assert one.max_in_flight <= 4 < two.max_in_flight  # an item's four judges run at once


@pytest.fixture
def limiter_waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits of the batch's rate limiter, on a clock that the waits move on."""
    from debate._cli import common as common_cli
    from debate.runtime._limiter import RateLimiter

    waits: list[float] = []
    now = [0.0]

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    def limiter(rpm: int | None, tpm: int | None) -> RateLimiter:
        return RateLimiter(rpm, tpm, clock=lambda: now[0], sleep=sleep)

    monkeypatch.setattr(common_cli, "RateLimiter", limiter)
    return waits


def test_batch_rpm_spaces_the_requests(h: Harness, limiter_waits: list[float]) -> None:
    free = h.run("batch", "--rpm", "1000")
    assert free.code == 0 and limiter_waits == []
    limited = h.run("batch", "--rpm", "4")
    assert limited.code == 0, limited.err
    assert len(limited.records) == 8 and len(limiter_waits) == 1  # 4 more after a minute
    assert limiter_waits[0] == pytest.approx(60.0)


def test_batch_tpm_spaces_the_tokens(h: Harness, limiter_waits: list[float]) -> None:
    free = h.run("batch", "--tpm", "10000000")
    assert free.code == 0 and limiter_waits == []
    limited = h.run("batch", "--tpm", "1000")
    assert limited.code == 0, limited.err
    assert limiter_waits and all(w > 0 for w in limiter_waits)


def test_batch_json_prints_the_summary(h: Harness) -> None:
    run = h.run("batch", "--json")
    assert run.code == 0, run.err
    summary = json.loads(run.out)
    assert (summary["ok"], summary["failed"]) == (2, 0)
    assert summary["results"] == str(run.folder / "results.jsonl")
    assert summary["items"] == 2 and [x["id"] for x in summary["lines"]] == ["i1", "i2"]


# --- calibrate ---------------------------------------------------------------------------


def test_calibrate_file_and_format(h: Harness) -> None:
    debate = h.run("calibrate")
    pairwise = h.run("calibrate", argv=["calibrate", str(h.pairs), "--format", "pairwise"])
    assert debate.code == pairwise.code == 0, pairwise.err
    assert debate.file("calibration.json")["dataset"] == "debate"
    assert pairwise.file("calibration.json")["dataset"] == "pairwise"
    assert all('"evaluations"' in json.dumps(r.body["response_format"]) for r in pairwise.records)


def test_calibrate_limit_takes_the_first_items(h: Harness) -> None:
    argv = ["calibrate", str(h.items), "--format", "debate"]
    every, first = h.run("calibrate", argv=argv), h.run("calibrate", "--limit", "1", argv=argv)
    assert every.file("calibration.json")["items"] == 2
    assert first.file("calibration.json")["items"] == 1


def test_calibrate_concurrency_bounds_items_in_flight(h: Harness) -> None:
    argv = ["calibrate", str(h.items), "--format", "debate"]
    with FakeOpenAIServer(latency=0.5) as one:
        assert h.run("calibrate", "--concurrency", "1", server=one, argv=argv).code == 0
    with FakeOpenAIServer(latency=0.5) as two:
        assert h.run("calibrate", "--concurrency", "2", server=two, argv=argv).code == 0
    assert one.max_in_flight <= 4 < two.max_in_flight


def test_pairwise_accuracy_after_keys_each_judge_by_its_own_model(h: Harness) -> None:
    """A judge with a model of its own has its own track record, not the shared model's."""
    config = h.tmp / "own-models.toml"
    weights = "weights = {logic = 0.25, evidence = 0.25, responsiveness = 0.25, honesty = 0.25}"
    config.write_text(
        f'[[judges]]\nname = "a"\nrole = "technical"\n{weights}\n'
        f'[[judges]]\nname = "b"\nrole = "risk"\nmodel = "own-model"\n{weights}\n'
    )
    argv = ["calibrate", str(h.pairs), "--format", "pairwise", "--config", str(config)]
    server = FakeOpenAIServer()

    def prefer_no(body: dict[str, Any]) -> Reply:  # people chose "yes": every call is wrong
        shown = RESPONSE.findall(body["messages"][1]["content"])
        return Reply(content=review_reply({label: 9 if t == "no" else 2 for label, t in shown}))

    server.responder = prefer_no
    with server:
        run = h.run("calibrate", server=server, argv=argv)
    assert run.code == 0, run.err
    assert {r.body["model"] for r in run.records} == {"m", "own-model"}

    records = TrackRecords(h.tmp / "store.sqlite")
    own = identity("risk", "own-model", PromptRenderer(None))
    shared = identity("risk", "m", PromptRenderer(None))
    assert records.get(own).items == 1 and records.get(shared).items == 0
    report = run.file("calibration.json")
    assert records.all_accuracies()[own] < 1.0  # one wrong call
    assert report["accuracy_after"]["b"] == pytest.approx(records.all_accuracies()[own])


# --- agreement ---------------------------------------------------------------------------

RATINGS = "1,2,3,3,2,1,4,1,2\n1,2,3,3,2,2,4,1,2\n2,3,3,3,2,3,4,2,2\n1,2,3,3,2,4,4,1,2\n"


def agreement(capsys: pytest.CaptureFixture[str], path: Path, *argv: str) -> dict[str, Any]:
    assert main(["agreement", str(path), "--json", *argv]) == 0
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return report


@pytest.fixture
def ratings(tmp_path: Path) -> Path:
    path = tmp_path / "ratings.csv"
    path.write_text(RATINGS)
    return path


def test_agreement_file_is_read(ratings: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = ratings.with_name("other.csv")
    other.write_text("1,2,3\n1,2,3\n")
    raters = ("--layout", "raters-by-items", "--bootstrap", "0")  # a row per rater
    assert agreement(capsys, other, *raters)["alpha"] == pytest.approx(1.0)
    assert agreement(capsys, ratings, *raters)["alpha"] < 1.0


def test_agreement_level_changes_the_statistic(
    ratings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    interval = agreement(capsys, ratings, "--bootstrap", "0")["alpha"]
    nominal = agreement(capsys, ratings, "--bootstrap", "0", "--level", "nominal")["alpha"]
    assert interval != pytest.approx(nominal)


def test_agreement_format_fleiss(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "labels.csv"
    path.write_text("1,1\n1,2\n2,2\n3,3\n3,1\n2,2\n")
    assert "alpha" in agreement(capsys, path, "--bootstrap", "0")
    assert agreement(capsys, path, "--format", "fleiss")["kappa"] == pytest.approx(0.4894, abs=1e-4)


def test_agreement_names_skips_the_first_column(
    tmp_path: Path, ratings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "named.csv"
    path.write_text("".join(f"rater{n},{row}\n" for n, row in enumerate(RATINGS.splitlines())))
    assert main(["agreement", str(path), "--bootstrap", "0"]) == 2
    assert "give --names" in capsys.readouterr().err  # the name column is not read as a rater
    named = agreement(capsys, path, "--names", "--bootstrap", "0")["alpha"]
    assert named == pytest.approx(agreement(capsys, ratings, "--bootstrap", "0")["alpha"])


def test_agreement_header_skips_the_first_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "header.csv"
    path.write_text("9,9,9,9,9,9,9,9,9\n" + RATINGS)
    with_header = agreement(capsys, path, "--header", "--bootstrap", "0")["alpha"]
    without = agreement(capsys, path, "--bootstrap", "0")["alpha"]
    path.write_text(RATINGS)
    assert with_header == pytest.approx(agreement(capsys, path, "--bootstrap", "0")["alpha"])
    assert without != pytest.approx(with_header)


def test_agreement_bootstrap_gives_an_interval(
    ratings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert agreement(capsys, ratings, "--bootstrap", "0").get("ci95") is None
    ci = agreement(capsys, ratings, "--bootstrap", "200")["ci95"]
    assert ci[0] < ci[1]


def test_agreement_seed_draws_another_bootstrap(
    ratings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = agreement(capsys, ratings, "--bootstrap", "200", "--seed", "1")["ci95"]
    same = agreement(capsys, ratings, "--bootstrap", "200", "--seed", "1")["ci95"]
    other = agreement(capsys, ratings, "--bootstrap", "200", "--seed", "2")["ci95"]
    assert one == same and one != other


def test_agreement_domain_orders_labels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ordinal.csv"
    path.write_text("low,mid,high,high\nlow,high,high,mid\nmid,mid,high,high\n")
    argv = ("--level", "ordinal", "--bootstrap", "0", "--layout", "raters-by-items")
    natural = agreement(capsys, path, *argv, "--domain", "low,mid,high")["alpha"]
    shuffled = agreement(capsys, path, *argv, "--domain", "mid,low,high")["alpha"]
    assert natural != pytest.approx(shuffled)


def test_agreement_json_is_machine_readable(
    ratings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["agreement", str(ratings), "--bootstrap", "0"]) == 0
    text = capsys.readouterr().out
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    assert "alpha" in agreement(capsys, ratings, "--bootstrap", "0")


def test_version_prints_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    from debate._version import __version__

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"debate {__version__}"


# --- the inventory: every flag of every subcommand is in docs/flags.md -------------------


def flag_inventory() -> Iterator[tuple[str, str]]:
    import argparse

    from debate._cli.main import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in commands.choices.items():
        for action in sub._actions:
            if action.option_strings and action.dest != "help":
                yield name, action.option_strings[-1]


def test_every_flag_is_in_the_inventory() -> None:
    table = (ROOT / "docs" / "flags.md").read_text()
    rows = {
        (cells[1].strip(), cells[2].strip().strip("`"))
        for line in table.splitlines()
        if line.startswith("| ") and len(cells := line.split("|")) > 3
    }
    flags = set(flag_inventory())
    missing = [pair for pair in flags if pair not in rows]
    assert missing == []
    removed = {
        (cells[1].strip(), cells[2].strip().strip("`"))
        for line in table.splitlines()
        if line.startswith("| ") and "removed" in line and len(cells := line.split("|")) > 3
    }
    stale = [
        (command, flag)
        for command, flag in rows - removed
        if flag.startswith("--") and command != "debate" and (command, flag) not in flags
    ]
    assert stale == []  # a row for a flag the command does not have


# --- the embedded model's timeout, on a stand-in for llama.cpp ---------------------------


class SlowLlama:
    """Generates one token every 10 ms until max_tokens, checking the stopping criteria the
    way llama-cpp-python's ``create_completion`` does; its chat call goes through that."""

    def __init__(self) -> None:
        self._input_ids: list[int] = []
        self.generated = 0

    def create_completion(self, *, max_tokens: int, stopping_criteria: Any = None) -> Any:
        import time

        finish = "length"
        for _ in range(max_tokens):
            time.sleep(0.01)
            self.generated += 1
            if stopping_criteria is not None and stopping_criteria(self._input_ids, None):
                finish = "stop"
                break
        usage = {"prompt_tokens": 1, "completion_tokens": self.generated}
        message = {"role": "assistant", "content": "{}"}
        return {"choices": [{"message": message, "finish_reason": finish}], "usage": usage}

    def create_chat_completion(self, *, max_tokens: int, **_: Any) -> Any:
        return self.create_completion(max_tokens=max_tokens, stopping_criteria=None)


def test_timeout_stops_the_embedded_model_mid_generation(tmp_path: Path) -> None:
    """LocalModel used to ignore --timeout: llama.cpp ran to max_tokens whatever it said."""
    import asyncio

    from pydantic import BaseModel

    from debate.exceptions import ProviderError
    from debate.models._base import Message, ModelSettings

    local = pytest.importorskip("debate.models.local")
    pytest.importorskip("llama_cpp")
    gguf = tmp_path / "stand-in.gguf"
    gguf.write_bytes(b"GGUF")
    model = local.LocalModel(gguf)
    model._llm = slow = SlowLlama()
    messages = [Message(role="user", content="hi")]

    class Empty(BaseModel):
        pass

    with pytest.raises(ProviderError) as caught:
        asyncio.run(model.complete(messages, Empty, ModelSettings(max_tokens=500, timeout=0.1)))
    assert caught.value.kind == "timeout" and "0.1s" in str(caught.value)
    assert slow.generated < 100  # stopped near 0.1 s, not after 500 tokens (5 s)
    slow.generated = 0
    reply = asyncio.run(model.complete(messages, Empty, ModelSettings(max_tokens=5, timeout=30)))
    assert reply.finish_reason == "length" and slow.generated == 5
    assert "create_completion" not in vars(slow)  # the stopping hook is gone after the call
