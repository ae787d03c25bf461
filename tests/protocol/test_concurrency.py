"""PRO and CON run concurrently within each stage; the four judges run concurrently."""

from __future__ import annotations

import asyncio

from debate import RunConfig, run_debate_sync
from debate.models import Message, ModelSettings
from debate.models.openai import OpenAIModel
from debate.runtime import ClosingDraft
from tests.support.openai_server import FakeOpenAIServer, Record


async def _first_call(model: OpenAIModel) -> None:
    messages = [Message(role="user", content="Say something.")]
    try:
        await model.complete(messages, ClosingDraft, ModelSettings())
    finally:
        await model.aclose()


def max_overlap(records: list[Record]) -> int:
    events = sorted([(r.start, 1) for r in records] + [(r.replied, -1) for r in records])
    best = current = 0
    for _, step in events:
        current += step
        best = max(best, current)
    return best


def test_judges_and_sides_are_in_flight_together() -> None:
    with FakeOpenAIServer(latency=0.3) as server:
        model = OpenAIModel("m", base_url=server.base_url, api_key_env="")
        # The process's first call to an endpoint and model is sent alone (its structured-
        # output form is not known yet, tests/models/test_openai_transport.py); once it is, every
        # call of a stage goes at once.
        asyncio.run(_first_call(model))
        result = run_debate_sync("Should we adopt the plan?", config=RunConfig(), model=model)
        records = list(server.records)[1:]
    assert result.usage.calls == 10
    judges = [r for r in records if r.system.startswith("You are one judge")]
    openings = [r for r in records if "Write your opening" in r.user]
    cross = [r for r in records if "Cross-examination, round 1" in r.user]
    closings = [r for r in records if "Write your closing" in r.user]
    assert (len(judges), len(openings), len(cross), len(closings)) == (4, 2, 2, 2)
    assert max_overlap(judges) == 4
    for stage in (openings, cross, closings):
        assert max_overlap(stage) == 2
    assert server.max_in_flight == 4
    # stages follow one another: the critical path is four round trips
    assert max(r.replied for r in openings) <= min(r.start for r in cross)
    assert max(r.replied for r in closings) <= min(r.start for r in judges)
    print(
        f"in flight: judges {max_overlap(judges)}, per debater stage 2; max {server.max_in_flight}"
    )


def test_judge_requests_share_a_byte_identical_prefix_in_fixed_order() -> None:
    """With one presentation order for all judges, everything up to the role is shared."""
    with FakeOpenAIServer() as server:
        model = OpenAIModel("m", base_url=server.base_url, api_key_env="")
        config = RunConfig(model="m", presentation="fixed")
        run_debate_sync("Should we adopt the plan?", model=model, config=config)
        judges = [r for r in server.records if r.system.startswith("You are one judge")]
    systems = {r.system for r in judges}
    assert len(systems) == 1
    users = [r.user for r in judges]
    prefix = users[0][: users[0].index("# Your role")]
    assert all(u.startswith(prefix) for u in users)
    assert len(prefix) > 0.8 * min(len(u) for u in users)


def test_counterbalanced_judges_read_in_their_own_order() -> None:
    with FakeOpenAIServer() as server:
        model = OpenAIModel("m", base_url=server.base_url, api_key_env="")
        result = run_debate_sync("Should we adopt the plan?", model=model, seed=4)
        judges = [r for r in server.records if r.system.startswith("You are one judge")]
    firsts = [e.positions for e in result.evaluations]
    first_side = [min(p, key=p.__getitem__)[:3] for p in firsts]
    assert sorted(first_side) == ["CON", "CON", "PRO", "PRO"]
    for evaluation in result.evaluations:
        request = next(r.user for r in judges if f"# Your role: {evaluation.role} " in r.user)
        shown = sorted(evaluation.positions, key=evaluation.positions.__getitem__)
        offsets = [request.index(f"### {arg_id}") for arg_id in shown]
        assert offsets == sorted(offsets)  # the prompt shows them in the recorded order
