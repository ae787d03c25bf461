"""A debate in ten lines, on the embedded model (pass a model name to use another backend)."""

import sys

from debate import RunConfig, run_debate_sync, write_result

model = sys.argv[1] if len(sys.argv) > 1 else "local"  # "scripted" runs offline, instantly
result = run_debate_sync(
    "Should our team adopt trunk-based development?", config=RunConfig(model=model), seed=7
)
print(result.decision.outcome, result.decision.winner, f"margin {result.vote.margin}")
print("reasons:", *result.decision.reasons, sep="\n  ")
print("written to", write_result(result, "quickstart-out"))
