"""Every reply a server can send, through the ``debate`` command, against the fault server.

The server (``tests/support/fault_server.py``) is independent of the package's own test doubles and
logs every request and every reply, so each check compares a result with what was really
sent: a bad reply is never cached (a re-ask reaches the server, a failed debate succeeds
when re-run after the server recovers), and 40 debates at 40 % faults of every kind give
no traceback, no score the server did not send, and a result for nearly every debate.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import sqlite3
import threading
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from debate._cli.main import main
from tests.support.fault_server import APOLOGY, ERROR_BODY, KINDS, Exchange, FaultServer

DIMENSIONS = ("logic", "evidence", "responsiveness", "honesty", "standing")
TIMEOUT = "1"  # seconds: a drip takes 2 s; a normal reply takes milliseconds
TRANSPORT_CRASHES = ("html_200", "truncated_envelope")
"""Faults that crash inside models/openai.py (issue 16 item 2, the OpenAI transport's part)."""
UNCAUGHT = (
    "HTML 200 ('str' object has no attribute 'choices') and a truncated envelope "
    "(JSONDecodeError) escape models/openai.py and the CLI prints a traceback: issue 16 "
    "item 2, fixed in the OpenAI transport"
)


@dataclass
class Runs:
    """What in-process ``debate`` commands returned and wrote on stderr."""

    codes: list[int] = field(default_factory=list)
    escaped: list[str] = field(default_factory=list)
    """Tracebacks of exceptions that escaped ``main`` (each one a crash)."""
    stderr: str = ""


def _argv(server: FaultServer, out: Path, topic: str, *extra: str) -> list[str]:
    config = out.parent / "fault-config.toml"
    if not config.exists():
        config.write_text("backoff = 0.05\n")
    return [
        "run",
        topic,
        "--model",
        "m",
        "--base-url",
        server.base_url,
        "--api-key-env",
        "",
        "--out",
        str(out),
        "--config",
        str(config),
        "--arguments",
        "2",
        "--rounds",
        "1",
        "--seed",
        "7",
        "--timeout",
        TIMEOUT,
        "--no-store",
        "--quiet",
        *extra,
    ]


def _commands(argvs: Sequence[list[str]], workers: int = 1) -> Runs:
    """Run ``debate`` commands in this process (``workers`` at a time), catching any escape."""
    runs = Runs()
    lock = threading.Lock()

    def one(argv: list[str]) -> None:
        try:
            code = main(argv)
        except BaseException:  # a crash is what this test looks for  # noqa: BLE001
            with lock:
                runs.escaped.append(traceback.format_exc())
            return
        with lock:
            runs.codes.append(code)

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(one, argvs))
    runs.stderr = err.getvalue()
    return runs


def _result(out: Path) -> dict[str, Any] | None:
    path = out / "result.json"
    return json.loads(path.read_text()) if path.exists() else None


def _is_opening(side: str) -> Callable[[dict[str, Any]], bool]:
    def match(body: dict[str, Any]) -> bool:
        system, prompt = body["messages"][0]["content"], body["messages"][1]["content"]
        return f"You are the {side} side" in system and prompt.startswith("Write your opening")

    return match


def _cached_texts(out: Path) -> list[str]:
    with contextlib.closing(sqlite3.connect(out / "cache.sqlite")) as db:
        return [row[0] for row in db.execute("SELECT text FROM responses")]


# -- item 3: only valid replies are cached ------------------------------------------------------

BAD_REPLIES = {"empty": "", "null": "", "apology": APOLOGY, "error_body": ERROR_BODY}


@pytest.mark.parametrize("kind", list(BAD_REPLIES))
def test_a_bad_reply_is_not_cached_and_its_re_ask_reaches_the_server(
    kind: str, tmp_path: Path
) -> None:
    """The issue's reproduction: the same bad reply twice makes the second re-ask carry the
    same messages as the first; with the bad reply cached it was a cache hit (usage said 12
    calls, the server saw 8). Now usage and the server's log agree."""
    opening = _is_opening("PRO")
    seen = Counter[str]()

    def pick(body: dict[str, Any]) -> str | None:
        if not opening(body):
            return None
        seen["pro"] += 1
        return kind if seen["pro"] <= 2 else None

    with FaultServer(pick=pick) as server:
        runs = _commands([_argv(server, tmp_path / "out", "Should we adopt the plan?")])
        sent = server.exchanges()
    assert runs.codes == [0] and not runs.escaped, runs.stderr
    result = _result(tmp_path / "out")
    assert result is not None
    pro = [x for x in sent if opening(x.body)]
    assert [x.kind for x in pro] == [kind, kind, None]
    assert pro[1].messages == pro[2].messages  # the re-ask after the same bad reply, again
    assert result["usage"]["calls"] == len(sent), "usage counts a call the server never saw"
    row = next(
        c for c in result["usage"]["per_call"] if (c["phase"], c["actor"]) == ("opening", "PRO")
    )
    assert row["attempts"] == 3
    cached = _cached_texts(tmp_path / "out")
    assert len(cached) == len(sent) - 2  # every valid reply, and no bad one
    assert BAD_REPLIES[kind] not in cached


@pytest.mark.parametrize("kind", [*BAD_REPLIES, "http_500", "refusal", "bool_score"])
def test_a_debate_that_failed_on_a_transient_fault_succeeds_when_re_run(
    kind: str, tmp_path: Path
) -> None:
    opening = _is_opening("PRO")
    failing = True

    def pick(body: dict[str, Any]) -> str | None:
        if kind == "bool_score":  # a judge that keeps writing true for a score
            faulted = "# Your role: technical judge" in body["messages"][1]["content"]
        else:
            faulted = opening(body)
        return kind if failing and faulted else None

    out = tmp_path / "out"
    with FaultServer(pick=pick) as server:
        argv = _argv(server, out, "Should we adopt the plan?")
        first = _commands([argv])
        before = len(server.exchanges())
        failing = False  # the server recovers
        second = _commands([argv])
        after = server.exchanges()[before:]
    assert not first.escaped and not second.escaped, first.stderr + second.stderr
    if kind == "bool_score":  # the judge was unscored, never scored 1
        assert first.codes == [0]
    else:
        assert first.codes == [1] and "could not produce its opening" in first.stderr
        assert len(first.stderr.strip().splitlines()) == 1, first.stderr
    assert second.codes == [0], second.stderr
    result = _result(out)
    assert result is not None and result["decision"]["outcome"]
    assert after, "the re-run sent nothing: the failure was replayed from the cache"
    assert all(x.kind is None for x in after)
    if kind == "bool_score":
        technical = next(e for e in result["evaluations"] if e["role"] == "technical")
        assert technical["status"] == "scored"
        assert any("# Your role: technical judge" in x.messages[1]["content"] for x in after)
    else:
        assert any(opening(x.body) for x in after)


# -- one fault of each kind, on the first attempt of every call ---------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_a_fault_on_the_first_attempt_of_every_call_is_survived(kind: str, tmp_path: Path) -> None:
    firsts: set[str] = set()

    def pick(body: dict[str, Any]) -> str | None:
        key = json.dumps(body["messages"][:2])
        if key in firsts:
            return None
        firsts.add(key)
        return kind

    with FaultServer(pick=pick) as server:
        runs = _commands([_argv(server, tmp_path / "out", "Should we adopt the plan?")])
        sent = server.exchanges()
    assert not runs.escaped, runs.escaped[0]
    assert runs.codes == [0], runs.stderr
    result = _result(tmp_path / "out")
    assert result is not None
    faulted = [x for x in sent if x.kind == kind]
    assert faulted, f"no {kind} fault was sent"
    scored, _ = _check_scores(result, sent, "Should we adopt the plan?")
    assert scored == 4  # every judge was asked again and scored from a valid reply
    if kind != "drip":  # a drip is a fault only once --timeout bounds the whole call
        assert result["usage"]["retries"] == len(faulted)


def test_a_reply_dripped_over_twice_the_timeout_is_not_accepted(tmp_path: Path) -> None:
    opening = _is_opening("PRO")
    with FaultServer(pick=lambda body: "drip" if opening(body) else None) as server:
        runs = _commands([_argv(server, tmp_path / "out", "Should we adopt the plan?")])
    assert not runs.escaped and runs.codes == [1], runs.stderr
    assert "could not produce its opening" in runs.stderr


# -- the acceptance check: 40 debates at 40 % faults of every kind -----------------------------


def _typed(scores: dict[str, Any]) -> dict[str, Any]:
    """Scores with each value's JSON type, so that ``true`` never equals 1."""
    return {
        arg: {d: (type(s.get(d)).__name__, s.get(d)) for d in DIMENSIONS}
        if isinstance(s, dict)
        else s
        for arg, s in scores.items()
    }


def _judge_replies(sent: list[Exchange], topic: str, role: str) -> list[Exchange]:
    marker = f"# Your role: {role} judge"
    return [
        x
        for x in sent
        if len(x.messages) > 1
        and topic in x.messages[1]["content"]
        and marker in x.messages[1]["content"]
    ]


def _check_scores(result: dict[str, Any], sent: list[Exchange], topic: str) -> tuple[int, int]:
    """Every recorded score is the one the server sent in the judge's last, valid reply.

    Returns the number of scored and unscored judges.
    """
    scored = unscored = 0
    for evaluation in result["evaluations"]:
        replies = _judge_replies(sent, topic, evaluation["role"])
        assert replies, f"{topic}: judge {evaluation['judge']} sent no request"
        if evaluation["status"] != "scored":
            unscored += 1
            assert evaluation["scores"] is None
            if evaluation["reason"] in ("parse_failure", "schema_violation", "refused"):
                assert evaluation["raw"] is not None, "an unscored judge lost its raw output"
            continue
        scored += 1
        last = replies[-1]
        assert last.kind in (None, "drip"), f"{topic}: scored from a {last.kind} reply"
        assert _typed(evaluation["scores"]) == _typed(last.parsed["scores"]), (
            f"{topic}: judge {evaluation['judge']} recorded a score the server did not send"
        )
        for arg, score in evaluation["scores"].items():
            assert score["note"] == last.parsed["scores"][arg]["note"][:200]
    return scored, unscored


def _figures(results: dict[str, dict[str, Any]], sent: list[Exchange], runs: Runs) -> str:
    faults = Counter(x.kind for x in sent if x.kind)
    unscored = sum(r["agreement"]["judges_unscored"] for r in results.values())
    retries = sum(r["usage"]["retries"] for r in results.values())
    return (
        f"results {len(results)}/40, exit codes {dict(Counter(runs.codes))}, "
        f"crashes {len(runs.escaped)}, unscored judges {unscored}, retries {retries}, "
        f"requests {len(sent)}, faults {sum(faults.values())} {dict(sorted(faults.items()))}"
    )


@pytest.mark.parametrize(
    "kinds",
    [
        pytest.param(KINDS, id="every-fault"),
    ],
)
def test_forty_debates_at_40_percent_faults(
    kinds: tuple[str, ...], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    topics = [f"Debate {i:02d}: should team {i} adopt the plan?" for i in range(40)]
    caplog.set_level(logging.WARNING)
    with FaultServer(rate=0.4, seed=16, kinds=kinds) as server:
        argvs = [
            _argv(server, tmp_path / f"d{i:02d}", t, "--max-retries", "4")
            for i, t in enumerate(topics)
        ]
        runs = _commands(argvs, workers=8)
        sent = server.exchanges()
        results = {t: r for i, t in enumerate(topics) if (r := _result(tmp_path / f"d{i:02d}"))}
        figures = _figures(results, sent, runs)
        print("\nfault matrix:", figures)
        assert not runs.escaped, f"{figures}\n{runs.escaped[0]}"
        assert "Traceback" not in runs.stderr, figures
        assert not [r for r in caplog.records if r.exc_info], figures
        assert set(runs.codes) <= {0, 1}, figures
        assert len(results) >= 38, figures
        assert {x.kind for x in sent if x.kind} == set(kinds), figures
        judged = [_check_scores(r, sent, t) for t, r in results.items()]
        assert sum(s for s, _ in judged) > 0, figures  # unscored judges may or may not occur

        # a debate that failed on transient faults succeeds once the server stops injecting
        out = tmp_path / "recovered"
        server.pick = lambda body: "empty" if _is_opening("CON")(body) else None
        failed = _commands([_argv(server, out, "Should the recovered team adopt it?")])
        left = _result(out)
        server.pick, server.rate = None, 0.0
        recovered = _commands([_argv(server, out, "Should the recovered team adopt it?")])
    assert failed.codes == [1] and left is None, failed.stderr
    assert recovered.codes == [0] and _result(out) is not None, recovered.stderr
