"""``debate stability`` and Kendall's W: how often a verdict or a ranking would differ."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel

from debate import FunctionModel
from debate._cli.main import main
from debate.council import run_council_sync
from debate.models import Message
from debate.quality._stability import Stability, council_stability, run_seeds
from debate.records import Candidate
from debate.stats import kendall_w
from tests.support import ROOT
from tests.support.helpers import graded, review_reply, served, shown_candidates
from tests.support.openai_server import FakeOpenAIServer, Reply, request_schema

EXAMPLE = ROOT / "examples" / "meeting_transcript.json"


# --- Kendall's W -------------------------------------------------------------------------


def test_identical_rankings_concord_fully() -> None:
    assert kendall_w([[1, 2, 3, 4]] * 5) == pytest.approx(1.0)


def test_opposite_rankings_do_not_concord() -> None:
    assert kendall_w([[1, 2, 3], [3, 2, 1]]) == pytest.approx(0.0)


def test_kendall_w_matches_the_hand_computed_value() -> None:
    # Rank sums 4, 6, 8, 12 (mean 7.5): S = 12.25 + 2.25 + 0.25 + 20.25 = 35;
    # W = 12 * 35 / (3^2 * (4^3 - 4)) = 420 / 540.
    assert kendall_w([[1, 2, 3, 4], [1, 3, 2, 4], [2, 1, 3, 4]]) == pytest.approx(420 / 540)


def test_kendall_w_corrects_for_ties() -> None:
    # The third ranking ties the first two objects (midranks 1.5): rank sums 3.5, 6.5, 8, 12,
    # S = 16 + 1 + 0.25 + 20.25 = 37.5; T = 2^3 - 2 = 6 for that ranking;
    # W = 12 * 37.5 / (9 * 60 - 3 * 6) = 450 / 522 (uncorrected it would be 450 / 540).
    assert kendall_w([[1, 2, 3, 4], [1, 3, 2, 4], [1, 1, 3, 4]]) == pytest.approx(450 / 522)


def test_kendall_w_agrees_with_the_mean_spearman_correlation_without_ties() -> None:
    rng = np.random.default_rng(3)
    for m, n in [(3, 5), (6, 4), (10, 8)]:
        ranks = np.array([rng.permutation(n) + 1 for _ in range(m)], dtype=float)
        pairs = list(itertools.combinations(range(m), 2))
        mean_rs = np.mean([np.corrcoef(ranks[a], ranks[b])[0, 1] for a, b in pairs])
        # mean r_s = (m W - 1) / (m - 1), so W = ((m - 1) mean r_s + 1) / m
        assert kendall_w(ranks.tolist()) == pytest.approx(((m - 1) * mean_rs + 1) / m)


def test_kendall_w_is_undefined_without_an_order() -> None:
    assert kendall_w([[1, 1, 1], [2, 2, 2]]) is None
    assert kendall_w([[1, 2, 3]]) is None


# --- debate stability against a server whose judges flip at a planted rate ---------------

PLANTED = 0.3


def flips(seed: int) -> bool:
    """Whether the judges of the run with this sampling seed all favour CON."""
    return random.Random(f"flip:{seed}").random() < PLANTED


def planted_responder(body: dict[str, Any]) -> Reply:
    """Every judge of a run favours PRO strongly, or, with probability PLANTED, CON.

    The run is told by the request's sampling seed (each run has its own), so the judges of
    one run flip together and the panel's verdict flips with them.
    """
    schema = request_schema(body)
    ref = schema["properties"]["scores"]["$ref"].rsplit("/", 1)[-1]
    ids = list(schema["$defs"][ref]["properties"])
    favoured = "CON" if flips(int(body["seed"])) else "PRO"
    scores = {a: graded(9 if a.startswith(favoured) else 2) for a in ids}
    return Reply(content=json.dumps({"scores": scores, "key_finding": f"{favoured} stronger"}))


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def judged(
    capsys: pytest.CaptureFixture[str], server: FakeOpenAIServer, out: Path, seed: int
) -> Path:
    """``debate judge`` of the example transcript at ``server``: the result to re-judge."""
    code, _, err = run_cli(
        capsys, "judge", str(EXAMPLE), *served(server), "--seed", str(seed),
        "--out", str(out), "--quiet", "--no-store", "--no-cache",
    )  # fmt: skip
    assert code == 0, err
    return out / "result.json"


def test_stability_reports_the_planted_flip_rate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = 40
    with FakeOpenAIServer(responder=planted_responder) as server:
        result = judged(capsys, server, tmp_path, 11)
        first = json.loads(result.read_text())
        assert first["decision"]["winner"] == ("CON" if flips(11) else "PRO")
        before = len(server.records)
        code, out, err = run_cli(
            capsys, "stability", str(result), "--runs", str(runs), *served(server), "--json"
        )
        assert code == 0, err
        report = Stability.model_validate_json(out)
        seeds_sent = {int(r.body["seed"]) for r in server.records[before:]}
    assert report.runs == runs and len(report.verdicts) == runs
    assert seeds_sent == set(run_seeds(11, runs))  # one sampling seed per run, from --seed's
    flipped = sum(flips(s) for s in run_seeds(11, runs))
    # The verdict flips exactly when the judges do: the flip rate is the realised share.
    assert report.modal == "winner PRO"
    assert [v.verdict for v in report.verdicts] == [
        "winner CON" if flips(s) else "winner PRO" for s in run_seeds(11, runs)
    ]
    rate = report.flip_rate
    assert rate.value == pytest.approx(flipped / runs)
    assert 0 < rate.value < 1
    assert rate.low is not None and rate.high is not None
    assert rate.low <= PLANTED <= rate.high
    assert all(j.flip_rate.value == pytest.approx(flipped / runs) for j in report.judges)
    assert len(report.judges) == 4 and report.calls == 4 * runs


def test_stability_text_names_the_flip_rate_and_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(responder=planted_responder) as server:
        judged(capsys, server, tmp_path, 2)
        code, out, err = run_cli(
            capsys, "stability", str(tmp_path / "result.json"), "--runs", "5", *served(server)
        )
    assert code == 0, err
    assert "Flip rate" in out and "95% CI" in out and "Cost: 20 calls" in out


def test_stability_samples_multiply_the_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(responder=planted_responder) as server:
        judged(capsys, server, tmp_path, 2)
        before = len(server.records)
        code, out, err = run_cli(
            capsys, "stability", str(tmp_path / "result.json"), "--runs", "2",
            "--samples", "3", *served(server), "--json",
        )  # fmt: skip
        assert code == 0, err
        assert len(server.records) - before == 2 * 4 * 3
        assert {r.body["model"] for r in server.records[before:]} == {"m"}


def test_stability_api_key_env_names_the_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STABILITY_TEST_KEY", "sk-stability")
    with FakeOpenAIServer(responder=planted_responder) as server:
        judged(capsys, server, tmp_path, 2)
        before = len(server.authorizations)
        code, _, err = run_cli(
            capsys, "stability", str(tmp_path / "result.json"), "--runs", "1",
            "--model", "m", "--base-url", server.base_url, "--api-key-env", "STABILITY_TEST_KEY",
        )  # fmt: skip
        assert code == 0, err
        assert set(server.authorizations[before:]) == {"Bearer sk-stability"}


def test_stability_seed_chooses_the_runs_seeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(responder=planted_responder) as server:
        judged(capsys, server, tmp_path, 2)
        result = str(tmp_path / "result.json")
        reports = [
            Stability.model_validate_json(
                run_cli(
                    capsys, "stability", result, "--runs", "3", *served(server), *extra, "--json"
                )[1]
            )
            for extra in ([], ["--seed", "2"], ["--seed", "9"])
        ]
    seeds = [[v.seed for v in r.verdicts] for r in reports]
    assert seeds[0] == seeds[1] == run_seeds(2, 3)  # default: the result's seed
    assert seeds[2] == run_seeds(9, 3) != seeds[0]


def test_stability_refuses_a_file_that_is_not_a_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("[1, 2]")
    code, _, err = run_cli(capsys, "stability", str(bad), "--model", "scripted")
    assert code == 2 and "not a result" in err


# --- council rank stability ---------------------------------------------------------------

QUALITY = {"alpha answer": 8, "beta answer": 6, "gamma answer": 3}
CANDIDATES = [
    Candidate(id="A", text="alpha answer"),
    Candidate(id="B", text="beta answer"),
    Candidate(id="C", text="gamma answer"),
]


def test_council_stability_is_kendalls_w_over_the_runs_rankings() -> None:
    swapped = {"now": False}

    def reply(messages: list[Message], schema: type[BaseModel]) -> str:
        def score(text: str) -> int:
            q = QUALITY[text]
            if swapped["now"] and q in (8, 6):
                return 14 - q  # A and B trade places
            return q

        return review_reply({label: score(text) for label, text in shown_candidates(messages)})

    reviewers = {n: FunctionModel(reply, name=n) for n in ("r1", "r2", "r3")}

    def rank(seed: int, swap: bool) -> Any:
        swapped["now"] = swap
        return run_council_sync("Which?", CANDIDATES, reviewers=reviewers, seed=seed)

    original = rank(1, False)
    plan = [False, True, False, False]  # m = 4 runs, f = 1 with A and B swapped
    runs = [rank(10 + i, s) for i, s in enumerate(plan)]
    report = council_stability(original, runs, "council.json")
    assert [r.ranking for r in report.rankings][1] == ["B", "A", "C"]
    # Rank sums A 5, B 7, C 12 (mean 8): S = 9 + 1 + 16 = 26; W = 12 S / (16 * 24).
    assert report.kendall_w == pytest.approx(12 * 26 / (16 * 24))
    assert report.modal == report.original == "A"
    assert report.flip_rate.value == pytest.approx(0.25)
    assert report.calls == 4 * 3


def test_stability_of_a_council_result_reranks_its_candidates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{"id": c.id, "text": c.text} for c in CANDIDATES]
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "council"
    code, _, err = run_cli(
        capsys, "council", "Which?", "--candidates", str(tmp_path / "c.jsonl"),
        "--model", "scripted", "--seed", "4", "--out", str(out), "--quiet", "--no-store",
    )  # fmt: skip
    assert code == 0, err
    code, text, err = run_cli(
        capsys, "stability", str(out / "result.json"), "--runs", "4", "--json"
    )
    assert code == 0, err
    report = Stability.model_validate_json(text)
    assert report.kind == "council" and len(report.rankings) == 4
    assert [r.seed for r in report.rankings] == run_seeds(4, 4)
    assert report.kendall_w is not None and 0 <= report.kendall_w <= 1
    code, _, err = run_cli(capsys, "stability", str(out / "result.json"), "--samples", "2")
    assert code == 2 and "--samples" in err
