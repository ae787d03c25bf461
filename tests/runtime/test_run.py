"""One `Run` carries the run-wide machinery into every entry point (issue 31, part 1)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from debate import (
    Budget,
    ModelPool,
    MultiJudgePanel,
    Run,
    RunConfig,
    TestModel,
    judge_transcript,
    run_council_sync,
    run_debate,
    run_debate_sync,
)
from debate.records import Candidate
from debate.runtime._limiter import LimitedModel, RateLimiter
from debate.storage import ResponseCache

SMALL = RunConfig(arguments=1, rounds=0)


class Closable(TestModel):
    """A test model that counts how often it was closed."""

    def __init__(self, name: str = "scripted") -> None:
        super().__init__(seed=1, name=name)
        self.closed = 0

    async def aclose(self) -> None:
        self.closed += 1


def test_a_shared_run_replays_its_cache_across_calls(tmp_path: Path) -> None:
    run = Run(cache=ResponseCache(tmp_path / "c.sqlite"))
    first = Closable()
    one = run_debate_sync("Should we?", config=SMALL, model=first, seed=3, run=run)
    again = Closable()
    two = run_debate_sync("Should we?", config=SMALL, model=again, seed=3, run=run)
    assert one.usage.calls > 0
    assert first.requests and not again.requests  # every call of the second run replayed
    assert one.decision == two.decision


def test_the_sync_wrappers_close_the_callers_models_and_the_async_ones_do_not() -> None:
    pro, con, judge = Closable("p"), Closable("c"), Closable("j")
    judges = {spec.name: judge for spec in SMALL.judges}
    run_debate_sync("Should we?", config=SMALL, pro=pro, con=con, judges=judges, seed=1)
    assert (pro.closed, con.closed, judge.closed) == (1, 1, 1)
    kept = Closable()
    asyncio.run(run_debate("Should we?", config=SMALL, model=kept, seed=1))
    assert kept.closed == 0  # the caller may share it with other runs


def test_council_sync_closes_its_reviewers() -> None:
    reviewer = Closable("r")
    candidates = [Candidate(id="a", text="Yes."), Candidate(id="b", text="No.")]
    run_council_sync("Which?", candidates, reviewers={"r": reviewer}, seed=1)
    assert reviewer.closed == 1


def test_a_runs_pool_is_used_and_left_open() -> None:
    config = SMALL.model_copy(update={"model": "scripted"})
    pool = ModelPool(config)
    built = pool.get(None)
    result = run_debate_sync("Should we?", config=config, seed=2, run=Run(pool=pool))
    assert pool.get(None) is built  # the run built nothing of its own
    assert result.debaters == {"PRO": built.name, "CON": built.name}


def test_the_runs_limiter_wraps_every_model() -> None:
    run = Run(limiter=RateLimiter(rpm=10_000))
    model = TestModel()
    limited = run.limit(model)
    assert isinstance(limited, LimitedModel) and limited.inner is model
    assert Run().limit(model) is model


def test_old_keywords_still_work_with_a_deprecation_warning() -> None:
    with pytest.warns(DeprecationWarning, match=r"run=Run\(budget=\.\.\.\)"):
        result = asyncio.run(
            judge_transcript(
                run_debate_sync("Should we?", config=SMALL, model=TestModel(), seed=1).transcript,
                config=SMALL,
                model=TestModel(),
                seed=1,
                budget=Budget(max_tokens=10),
            )
        )
    assert result.usage.budget is not None and result.usage.budget.max_tokens == 10
    assert all(e.status == "unscored" and e.reason == "budget" for e in result.evaluations)


def test_an_unknown_keyword_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'limter'"):
        asyncio.run(run_debate("Should we?", model=TestModel(), limter=None))


def test_the_panel_takes_the_run_and_its_old_keywords_with_a_warning(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    panel = MultiJudgePanel(models=TestModel(), run=Run(cache=cache, history={"x": 0.5}))
    assert panel.cache is cache and panel.history == {"x": 0.5}
    with pytest.warns(DeprecationWarning, match=r"MultiJudgePanel\(history=\) is deprecated"):
        old = MultiJudgePanel(models=TestModel(), history={"x": 0.5})
    assert old.history == {"x": 0.5}


def test_the_panel_refuses_a_run_field_it_never_took() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'budget'"):
        MultiJudgePanel(models=TestModel(), budget=Budget(max_tokens=10))
