"""A default debate on the embedded model, with and without prompt-prefix reuse.

Run: ``python benchmarks/bench_local.py`` (about 15 minutes on 2 cores: three debates).

Reports wall time, generated tokens/s, and the judges' prompt tokens evaluated vs reused
from llama.cpp's KV cache, for: prefix reuse on (default counterbalanced reading order),
reuse off, and reuse on with one fixed reading order for every judge (the layout that
shares the whole transcript between judges). Ratios are against the no-reuse run.
"""

from __future__ import annotations

import argparse
import time

from debate import RunConfig, run_debate_sync
from debate.models.local import LocalModel

TOPIC = "Should a small startup (under 10 people) adopt a microservices architecture from day one?"


def one(label: str, reuse: bool, presentation: str, seed: int) -> dict[str, float | str]:
    model = LocalModel(reuse_prefix=reuse)
    config = RunConfig(model="local", presentation=presentation)  # type: ignore[arg-type]
    start = time.perf_counter()
    result = run_debate_sync(TOPIC, config=config, model=model, seed=seed)
    wall = time.perf_counter() - start
    judges = [c for c in result.usage.per_call if c.phase == "judge"]
    prompt = sum(c.prompt_tokens for c in judges)
    reused = sum(c.cached_tokens for c in judges)
    return {
        "run": label,
        "wall_s": wall,
        "generated": result.usage.completion_tokens,
        "gen_tok_s": model.completion_tokens / max(model.generation_seconds, 1e-9),
        "judge_prompt": prompt,
        "judge_evaluated": prompt - reused,
        "judge_reused": reused,
        "all_evaluated": model.prompt_tokens_evaluated,
        "outcome": result.decision.outcome,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    runs = [
        one("reuse off", False, "counterbalanced", args.seed),
        one("reuse on (counterbalanced)", True, "counterbalanced", args.seed),
        one("reuse on (fixed order)", True, "fixed", args.seed),
    ]
    base = runs[0]
    print(
        f"{'run':<28} {'wall s':>7} {'x base':>7} {'gen tok':>8} {'tok/s*':>7} "
        f"{'judge prompt':>12} {'evaluated':>9} {'reused':>7} {'eval x base':>11} "
        f"{'all eval':>8}  outcome"
    )
    for r in runs:
        print(
            f"{r['run']:<28} {r['wall_s']:7.1f} {float(r['wall_s']) / float(base['wall_s']):7.2f} "
            f"{r['generated']:8} {r['gen_tok_s']:7.1f} {r['judge_prompt']:12} "
            f"{r['judge_evaluated']:9} {r['judge_reused']:7} "
            f"{float(r['judge_evaluated']) / max(float(base['judge_evaluated']), 1):11.2f} "
            f"{r['all_evaluated']:8}  {r['outcome']}"
        )
    print("* tokens generated per second of llama.cpp call time (prompt evaluation included)")


if __name__ == "__main__":
    main()
