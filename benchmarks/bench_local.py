"""A default debate on the embedded model: wall time and tokens against their bounds.

Run: ``python benchmarks/bench_local.py`` (three debates: about 6 minutes on 2 quiet cores;
``--runs 1`` for the default run alone).

The first run is ``make demo``'s debate (seed 7, the default shape, prefix reuse on). It
prints:

- wall time against the 120 s bound of a default embedded debate on 2 quiet cores;
- generated tokens against 1.5 x the budgeted tokens: the sum over the planned calls of
  each call's ``max_tokens``, derived from its reply schema (the longest reply the grammar
  allows), so a run that loops or re-asks too often shows here;
- where the time went: llama.cpp evaluating prompts, llama.cpp evaluating generated tokens,
  sampling (the grammar among it) and llama-cpp-python's work around each call, loading the
  model, and the rest (this package: prompts, parsing, the panel's statistics).

Then prefix reuse: the judges' prompt tokens evaluated vs reused from llama.cpp's KV cache,
for reuse on (counterbalanced reading orders, the default), reuse off, and reuse on with one
fixed reading order for every judge (the layout that shares the whole transcript between
judges). Ratios are against the no-reuse run. The load average is printed beside the
figures: the machine's other work slows every figure here.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from debate import RunConfig, run_debate_sync
from debate.models._schema import reply_max_tokens
from debate.models.local import LocalModel
from debate.runtime import ClosingDraft, judge_reply, keyed_reply

TOPIC = "Should a small startup (under 10 people) adopt a microservices architecture from day one?"
WALL_BOUND = 120.0
"""Seconds a default embedded debate may take on 2 quiet cores (the issue's bound)."""
TOKENS_FACTOR = 1.5
"""Generated tokens may reach this multiple of the budgeted tokens, no more."""


def budgeted_tokens(config: RunConfig) -> int:
    """The sum of the derived ``max_tokens`` of every call a default run plans."""
    pro = tuple(f"PRO-{i}" for i in range(1, config.arguments + 1))
    con = tuple(f"CON-{i}" for i in range(1, config.arguments + 1))
    per_side = [keyed_reply("argument", pro), ClosingDraft]
    per_side += [keyed_reply("exam", con)] * config.rounds
    other = [keyed_reply("argument", con), ClosingDraft]
    other += [keyed_reply("exam", pro)] * config.rounds
    readings = len(config.judges) * (2 if config.swap else 1)
    schemas = [*per_side, *other, *[judge_reply(pro + con)] * readings]
    bounds = [reply_max_tokens(s) for s in schemas]
    if any(b is None for b in bounds):
        raise SystemExit("a reply schema has no derived bound; the budget is undefined")
    return sum(b for b in bounds if b is not None)


def one(label: str, reuse: bool, presentation: str, seed: int) -> dict[str, Any]:
    model = LocalModel(reuse_prefix=reuse)
    config = RunConfig(model="local", presentation=presentation, timeout=900)  # type: ignore[arg-type]
    start = time.perf_counter()
    result = run_debate_sync(TOPIC, config=config, model=model, seed=seed)
    wall = time.perf_counter() - start
    judges = [c for c in result.usage.per_call if c.phase == "judge"]
    prompt = sum(c.prompt_tokens for c in judges)
    reused = sum(c.cached_tokens for c in judges)
    return {
        "run": label,
        "wall_s": wall,
        "load": os.getloadavg()[0],
        "budget": budgeted_tokens(config),
        "generated": result.usage.completion_tokens,
        "calls": result.usage.calls,
        "retries": result.usage.retries,
        "gen_tok_s": model.completion_tokens / max(model.generation_seconds, 1e-9),
        "judge_prompt": prompt,
        "judge_evaluated": prompt - reused,
        "judge_reused": reused,
        "all_evaluated": model.prompt_tokens_evaluated,
        "outcome": result.decision.outcome,
        "llama_s": model.generation_seconds,
        "full_passes": model.full_grammar_passes,
        "load_seconds": model.load_seconds,
        **model.timings(),
    }


def split(r: dict[str, Any]) -> None:
    """Where the default run's wall time went."""
    wall = r["wall_s"]
    sampling = r["llama_s"] - r["prompt_seconds"] - r["decode_seconds"]
    rest = wall - r["llama_s"] - r["load_seconds"]
    parts = [
        (f"prompt evaluation ({r['prompt_tokens']:.0f} tokens)", r["prompt_seconds"]),
        (f"generated-token evaluation ({r['decode_tokens']:.0f})", r["decode_seconds"]),
        (f"sampling, grammar ({r['full_passes']} full passes), llama-cpp-python", sampling),
        ("loading the model", r["load_seconds"]),
        ("this package (prompts, parsing, statistics)", rest),
    ]
    for name, seconds in parts:
        print(f"  {name:<60} {seconds:7.1f} s  {seconds / wall:6.1%}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--runs", type=int, choices=[1, 3], default=3)
    args = parser.parse_args()
    first = one("reuse on (counterbalanced)", True, "counterbalanced", args.seed)
    ratio = first["generated"] / first["budget"]
    print(
        f"default embedded debate (seed {args.seed}, load average {first['load']:.2f}): "
        f"{first['calls']} calls, {first['retries']} retries, outcome {first['outcome']}\n"
        f"  wall {first['wall_s']:.1f} s = {first['wall_s'] / WALL_BOUND:.2f} x the "
        f"{WALL_BOUND:.0f} s bound\n"
        f"  generated {first['generated']} tokens of {first['budget']} budgeted = {ratio:.3f} x "
        f"(bound {TOKENS_FACTOR} x)"
    )
    split(first)
    if args.runs == 1:
        return
    runs = [
        one("reuse off", False, "counterbalanced", args.seed),
        first,
        one("reuse on (fixed order)", True, "fixed", args.seed),
    ]
    base = runs[0]
    print(
        f"\n{'run':<28} {'wall s':>7} {'x base':>7} {'gen tok':>8} {'tok/s*':>7} "
        f"{'judge prompt':>12} {'evaluated':>9} {'reused':>7} {'eval x base':>11} "
        f"{'all eval':>8} {'load':>5}  outcome"
    )
    for r in runs:
        print(
            f"{r['run']:<28} {r['wall_s']:7.1f} {r['wall_s'] / base['wall_s']:7.2f} "
            f"{r['generated']:8} {r['gen_tok_s']:7.1f} {r['judge_prompt']:12} "
            f"{r['judge_evaluated']:9} {r['judge_reused']:7} "
            f"{r['judge_evaluated'] / max(base['judge_evaluated'], 1):11.2f} "
            f"{r['all_evaluated']:8} {r['load']:5.2f}  {r['outcome']}"
        )
    print("* tokens generated per second of llama.cpp call time (prompt evaluation included)")


if __name__ == "__main__":
    main()
