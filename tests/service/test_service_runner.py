"""The service's job runner: jobs run through the package API, fail alone, cancel, recover."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from debate._cli.main import ERROR_KINDS as CLI_ERROR_KINDS
from debate._cli.main import error_field, error_kind
from debate.exceptions import BudgetExceeded, ConfigurationError, DebaterError, ProviderError
from debate.models import Message
from debate.models.test import FunctionModel, TestModel
from debate.records import ERROR_KINDS, build_config
from debate.service._models import (
    CouncilCandidate,
    CouncilRequest,
    DebateRequest,
    DecisionRequest,
    Job,
    JudgementRequest,
    PanelOverrides,
    ServiceLimits,
    ServiceSettings,
)
from debate.service._requests import with_overrides
from debate.service._runner import JobRunner, ModelBundle, job_config, job_error
from debate.service._store import JobStore
from tests.support import ROOT
from tests.support.helpers import planted_judges, transcript
from tests.support.openai_server import FakeOpenAIServer

SMALL = build_config({"arguments": 1, "rounds": 0, "judges": [{"role": "technical"},
                      {"role": "risk"}], "provider_retries": 0})  # fmt: skip
PRO_WINS = planted_judges(lambda role, arg: 9 if arg.startswith("PRO") else 2)


def settings(workers: int = 8, per_token: int = 4) -> ServiceSettings:
    return ServiceSettings(limits=ServiceLimits(workers=workers, per_token_concurrency=per_token))


def bundle(delay: float = 0.0, judge: Callable[..., Any] = PRO_WINS) -> Callable[[], ModelBundle]:
    def make() -> ModelBundle:
        judges = {r: FunctionModel(judge, name=f"judge-{r}", delay=delay) for r in ("technical",
                  "risk")}  # fmt: skip
        return ModelBundle(model=TestModel(delay=delay), judges=judges)

    return make


async def until(check: Callable[[], bool], timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, "timed out"
        await asyncio.sleep(0.02)


def status(store: JobStore, job_id: str) -> str:
    job = store.get(job_id)
    assert job is not None
    return job.status


def runner(store: JobStore, **kwargs: Any) -> JobRunner:
    kwargs.setdefault("settings", settings())
    kwargs.setdefault("make_models", bundle())
    kwargs.setdefault("config", SMALL)
    return JobRunner(store, poll=0.05, **kwargs)


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    s = JobStore(tmp_path / "service.sqlite")
    yield s
    s.close()


def test_a_debate_job_runs_to_done_with_its_events(store: JobStore) -> None:
    finished: list[Job] = []

    async def main() -> None:
        async with runner(store, on_finished=finished.append) as r:
            job, _ = store.submit("debate", DebateRequest(topic="Adopt it?"), token=None,
                                  idempotency_key=None)  # fmt: skip
            r.wake()
            await until(lambda: status(store, job.id) == "done")

    asyncio.run(main())
    [job] = store.list()
    assert job.outcome == "winner" and job.result is not None
    assert job.result["decision"]["outcome"] == "winner"
    assert job.result["decision"]["winner"] == "PRO"
    assert job.result["topic"] == "Adopt it?"
    types = [e.type for e in store.events(job.id)]
    assert types[:3] == ["queued", "running", "plan"] and types[-1] == "done"
    plan = store.events(job.id)[2].data
    assert plan["command"] == "run" and plan["total"] == 6  # 2 openings, 2 closings, 2 judges
    steps = types[3:-1]
    assert steps.count("start") == steps.count("finish") == 6 and set(steps) == {"start", "finish"}
    assert [e.seq for e in store.events(job.id)] == list(range(1, len(types) + 1))
    assert [j.id for j in finished] == [job.id] and finished[0].status == "done"


def test_judgement_council_and_decision_jobs(store: JobStore) -> None:
    rows = [
        {"item": "p1", "option": o, "judge": j, "dimension": "d", "score": s}
        for j, scores in (("j1", (5, 1)), ("j2", (5, 2)), ("j3", (4, 1)))
        for o, s in zip(("a", "b"), scores, strict=True)
    ]
    requests: list[tuple[Any, Any]] = [
        ("judgement", JudgementRequest(transcript=transcript(1, 1))),
        ("decision", DecisionRequest(rows=rows, scale="1-5")),
    ]
    council = CouncilRequest(question="Which?", candidates=[
        CouncilCandidate(id="a", text="answer a"), CouncilCandidate(id="b", text="b")])  # fmt: skip

    async def run(jobs: list[tuple[Any, Any]], make: Callable[[], ModelBundle]) -> list[str]:
        async with runner(store, make_models=make) as r:
            ids = [store.submit(k, q, token=None, idempotency_key=None)[0].id for k, q in jobs]
            r.wake()
            await until(lambda: all(status(store, i) in ("done", "failed") for i in ids))
            return ids

    judged, decision = (store.get(i) for i in asyncio.run(run(requests, bundle())))
    [ranked] = asyncio.run(run([("council", council)], lambda: ModelBundle(model=TestModel())))
    assert judged is not None and judged.status == "done" and judged.outcome == "winner"
    assert [e.type for e in store.events(judged.id)][2] == "plan"
    done = store.get(ranked)
    assert done is not None and done.status == "done", done.error
    assert done.result is not None and done.result["kind"] == "council"
    assert {e["candidate"] for e in done.result["rankings"]} == {"a", "b"}
    assert store.events(ranked)[2].data == {"command": "council", "total": 2, "items": None}
    assert decision is not None and decision.status == "done", decision.error
    assert decision.result is not None and decision.result["summary"]["source"] == "rows"
    assert decision.result["decisions"][0]["winner"] == "a"


def test_bad_decision_rows_fail_with_the_clis_message(store: JobStore) -> None:
    rows = [{"item": "p1", "option": "a", "judge": "j1", "dimension": "d", "score": 9}]

    async def main() -> str:
        async with runner(store) as r:
            job, _ = store.submit("decision", DecisionRequest(rows=rows, scale="1-5"),
                                  token=None, idempotency_key=None)  # fmt: skip
            r.wake()
            await until(lambda: status(store, job.id) == "failed")
            return job.id

    failed = store.get(asyncio.run(main()))
    assert failed is not None and failed.error is not None
    assert failed.error.kind == "configuration"
    assert failed.error.message.startswith("rows line 1")
    assert "/tmp" not in failed.error.message and "\n" not in failed.error.message


def test_a_failing_model_fails_its_job_and_not_the_runner(store: JobStore) -> None:
    def broken(messages: list[Message], schema: Any) -> str:
        raise ProviderError("HTTP 503 from the model server", kind="provider_error")

    calls = {"n": 0}

    def make() -> ModelBundle:
        calls["n"] += 1
        return bundle()() if calls["n"] > 1 else ModelBundle(model=FunctionModel(broken))

    async def main() -> tuple[str, str]:
        async with runner(store, make_models=make) as r:
            bad, _ = store.submit("debate", DebateRequest(topic="A?"), token=None,
                                  idempotency_key=None)  # fmt: skip
            r.wake()
            await until(lambda: status(store, bad.id) == "failed")
            good, _ = store.submit("debate", DebateRequest(topic="B?"), token=None,
                                   idempotency_key=None)  # fmt: skip
            r.wake()
            await until(lambda: status(store, good.id) == "done")
            return bad.id, good.id

    bad_id, _ = asyncio.run(main())
    bad = store.get(bad_id)
    assert bad is not None and bad.error is not None
    assert bad.error.kind in ("provider", "debater")
    assert "HTTP 503" in bad.error.message and "\n" not in bad.error.message
    assert [e.type for e in store.events(bad_id)][-1] == "failed"


def test_error_kinds_are_the_clis() -> None:
    assert ERROR_KINDS == CLI_ERROR_KINDS[: len(ERROR_KINDS)]
    assert [k for _, k in CLI_ERROR_KINDS[len(ERROR_KINDS) :]] == ["interrupted"]
    for exc in (
        BudgetExceeded("the next call could pass the budget"),
        ConfigurationError("config.judges: unknown judge role 'wizard'"),
        ConfigurationError("arguments: must be 1 to 10; give 3"),
        ConfigurationError("x", field="--weights"),
        ProviderError("timeout\nafter 30s", kind="timeout"),
        DebaterError("PRO could not answer"),
        OSError("disk full"),
        RuntimeError("boom"),
    ):
        err = job_error(exc)
        assert err.kind == error_kind(exc)  # an MCP tool's error is this JobError too
        assert err.field == error_field(exc, err.message)
        assert "\n" not in err.message
    assert job_error(ConfigurationError("config.judges: no")).field == "config.judges"


def test_overrides_build_the_jobs_config() -> None:
    cfg = job_config(SMALL, PanelOverrides(judges=["risk", "business"], arguments=2,
                                           thresholds={"gap": 0.2}))  # fmt: skip
    assert [j.role for j in cfg.judges] == ["risk", "business"]
    assert cfg.arguments == 2 and cfg.thresholds.gap == 0.2 and cfg.thresholds.alpha == 0.5
    assert cfg.model == SMALL.model
    with pytest.raises(ConfigurationError, match=r"^config\.judges: unknown judge role 'wizard'"):
        job_config(SMALL, PanelOverrides(judges=["risk", "wizard"]))
    with pytest.raises(ConfigurationError, match=r"config\.thresholds\.nope"):
        job_config(SMALL, PanelOverrides(thresholds={"nope": 1.0}))


def test_a_job_without_panel_overrides_runs_on_the_servers_config() -> None:
    """A seed alone changes nothing of the panel: the server's config as it was checked."""
    for overrides in (PanelOverrides(), PanelOverrides(seed=7)):
        assert job_config(SMALL, overrides) is SMALL
        assert with_overrides(SMALL, overrides, prefix="config.") == SMALL


def test_unknown_role_fails_the_job_as_configuration(store: JobStore) -> None:
    request = DebateRequest(topic="A?", config=PanelOverrides(judges=["risk", "wizard"]))

    async def main() -> str:
        async with runner(store) as r:
            job, _ = store.submit("debate", request, token=None, idempotency_key=None)
            r.wake()
            await until(lambda: status(store, job.id) == "failed")
            return job.id

    job = store.get(asyncio.run(main()))
    assert job is not None and job.error is not None
    assert job.error.kind == "configuration" and job.error.field == "config.judges"


def test_cancel_a_running_job(store: JobStore) -> None:
    async def main() -> tuple[str, str]:
        async with runner(store, make_models=bundle(delay=30.0)) as r:
            a, _ = store.submit("debate", DebateRequest(topic="A?"), token=None,
                                idempotency_key=None)  # fmt: skip
            b, _ = store.submit("debate", DebateRequest(topic="B?"), token=None,
                                idempotency_key=None)  # fmt: skip
            r.wake()
            await until(lambda: status(store, a.id) == status(store, b.id) == "running")
            t0 = time.monotonic()
            store.cancel(a.id)  # as another process would: the runner polls the flag
            r.cancel(b.id)  # in-process: at once
            await until(lambda: status(store, a.id) == status(store, b.id) == "cancelled")
            assert time.monotonic() - t0 < 5
            return a.id, b.id

    by_store, by_runner = asyncio.run(main())
    # In-process, the job's buffered progress is written before the cancel: exact order.
    assert [e.type for e in store.events(by_runner)][-2:] == ["cancel_requested", "cancelled"]
    # Through the store (another process), progress buffered at that moment (up to
    # FLUSH_S of it) is written after the request; the end is still last.
    types = [e.type for e in store.events(by_store)]
    assert types[-1] == "cancelled" and types.count("cancel_requested") == 1
    assert types.index("cancel_requested") < types.index("cancelled")


def test_per_token_concurrency_lets_other_tokens_pass(store: JobStore) -> None:
    async def main() -> None:
        limits = settings(workers=8, per_token=2)
        async with runner(store, settings=limits, make_models=bundle(delay=0.4)) as r:
            a = [store.submit("debate", DebateRequest(topic=f"A{i}?"), token="token-A",
                              idempotency_key=None)[0].id for i in range(3)]  # fmt: skip
            b, _ = store.submit("debate", DebateRequest(topic="B?"), token="token-B",
                                idempotency_key=None)  # fmt: skip
            r.wake()
            await until(lambda: status(store, b.id) == "running")
            assert [status(store, i) for i in a] == ["running", "running", "queued"]
            await until(lambda: all(status(store, i) == "done" for i in [*a, b.id]), 60)
            # token A's third job starts only once one of its first two has finished (either
            # may finish first: under load the second one sometimes does)
            third, *earlier = (store.get(i) for i in a[::-1])
            ends = [j.finished for j in earlier if j is not None and j.finished is not None]
            assert third is not None and third.started is not None and len(ends) == 2
            assert third.started >= min(ends) - 0.01

    asyncio.run(main())


def test_stop_requeues_running_jobs_and_a_new_runner_finishes_them(store: JobStore) -> None:
    async def first() -> str:
        async with runner(store, make_models=bundle(delay=30.0)) as r:
            job, _ = store.submit("debate", DebateRequest(topic="A?"), token=None,
                                  idempotency_key=None)  # fmt: skip
            r.wake()
            await until(lambda: status(store, job.id) == "running")
        assert status(store, job.id) == "queued"
        return job.id

    async def second(job_id: str) -> None:
        async with runner(store) as r:
            await until(lambda: status(store, job_id) == "done")
            assert r.recovered == 0  # a clean stop left nothing running

    job_id = asyncio.run(first())
    asyncio.run(second(job_id))
    types = [e.type for e in store.events(job_id)]
    assert "requeued" in types and types.count("running") == 2 and types[-1] == "done"


# -- restart recovery across a real SIGKILL --------------------------------------------------


def worker_main(database: str, base_url: str, until_done: bool) -> None:
    """A service process: runs the store's jobs against ``base_url`` (killed by the test)."""
    config = build_config({"model": "m", "base_url": base_url, "api_key_env": "",
                           "arguments": 1, "rounds": 0, "provider_retries": 0,
                           "judges": [{"role": "technical"}, {"role": "risk"}]})  # fmt: skip

    async def main() -> None:
        store = JobStore(database)
        async with JobRunner(store, settings(workers=3), config=config, poll=0.05):
            while not until_done or store.active() > 0:
                await asyncio.sleep(0.05)

    asyncio.run(main())


def _spawn(database: Path, base_url: str, until_done: bool) -> subprocess.Popen[bytes]:
    code = (
        "import sys; from tests.service.test_service_runner import worker_main; "
        "worker_main(sys.argv[1], sys.argv[2], sys.argv[3] == '1')"
    )
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    args = [sys.executable, "-c", code, str(database), base_url, "1" if until_done else "0"]
    return subprocess.Popen(args, cwd=ROOT, env=env)


def _key(body: dict[str, Any]) -> str:
    return json.dumps([body["model"], body.get("seed"), body["messages"]], sort_keys=True)


def test_sigkill_mid_run_then_restart_finishes_every_job_without_repeating_calls(
    tmp_path: Path,
) -> None:
    database = tmp_path / "service.sqlite"
    store = JobStore(database)
    ids = [store.submit("debate", DebateRequest(topic=f"Should we do thing {i}?"), token=None,
                        idempotency_key=None)[0].id for i in range(5)]  # fmt: skip
    with FakeOpenAIServer(latency=0.3) as server:
        first = _spawn(database, server.base_url, until_done=False)
        try:
            deadline = time.monotonic() + 60
            while len(server.records) < 8:  # some calls completed, some in flight
                assert time.monotonic() < deadline and first.poll() is None
                time.sleep(0.01)
            in_flight, killed_at = server.in_flight, time.monotonic()
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=10)
        finally:
            if first.poll() is None:
                first.kill()
        time.sleep(0.5)  # the killed process's calls end on the server side
        before = [r for r in server.records if r.start < killed_at]
        assert status(store, ids[0]) in ("running", "done")
        second = _spawn(database, server.base_url, until_done=True)
        assert second.wait(timeout=120) == 0
        # The restarted process's calls: on connections it opened. A request the killed
        # process had sent can still be read by the server after the kill.
        after = [r for r in server.records if r.connected >= killed_at]
    jobs = [store.get(i) for i in ids]
    assert all(j is not None and j.status == "done" for j in jobs), [
        (j.status, j.error) for j in jobs if j is not None
    ]
    sent_before = Counter(_key(r.body) for r in before)
    resent = [r for r in after if _key(r.body) in sent_before]
    # A call is re-sent only if its reply had not reached the cache: it was in flight.
    unfinished = [r for r in before if r.end > killed_at - 0.1]
    assert len(resent) <= len(unfinished), (len(resent), len(unfinished), in_flight)
    assert len(before) >= 8 and len(after) > 0
    assert max(Counter(_key(r.body) for r in after).values()) == 1
    for job_id in ids:
        assert (
            "requeued" in [e.type for e in store.events(job_id)] or status(store, job_id) == "done"
        )
    store.close()
