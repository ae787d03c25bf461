"""A debate against any OpenAI-compatible server: OpenAI, vLLM, Ollama, llama.cpp's server.

python examples/openai_compatible.py --model gpt-4o-mini                 # OpenAI (OPENAI_API_KEY)
python examples/openai_compatible.py --model qwen2.5:14b --base-url http://127.0.0.1:11434/v1 \
    --api-key-env ""                                                     # a server without a key
"""

import argparse

from debate import RunConfig, run_debate_sync, write_result

parser = argparse.ArgumentParser()
parser.add_argument("--model", required=True)
parser.add_argument("--base-url", default=None)
parser.add_argument("--api-key-env", default=None, help='the key\'s variable; "" for none')
parser.add_argument("--out", default="openai-out")
args = parser.parse_args()

config = RunConfig(model=args.model, base_url=args.base_url, api_key_env=args.api_key_env)
result = run_debate_sync(
    "Should we migrate our billing service to event sourcing?", config=config, seed=3
)
print(result.decision.outcome, result.decision.winner, result.vote.margin)
print("written to", write_result(result, args.out))
