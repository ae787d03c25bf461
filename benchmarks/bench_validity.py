"""Judges against people on real labelled data: UKPConvArg1 and PandaLM.

Run (embedded model):
    python benchmarks/bench_validity.py --data ../shared/datasets --limit 64
Any OpenAI-compatible model:
    python benchmarks/bench_validity.py --data ../shared/datasets --limit 64 \\
        --model gpt-4o-mini [--base-url URL --api-key-env NAME]

Prints, per dataset, each judge's and the panel's accuracy against the people's majority
with a Wilson interval, Cohen's kappa, how often it says "tie" when people split vs when
they agree, and alpha among judges beside alpha among people; for PandaLM the published
GPT-3.5 judge on the same items is shown beside. Track records go to a throwaway store
unless --store is given; --cache PATH keeps every completed call, so an interrupted run
resumes where it stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from debate import RunConfig  # noqa: E402
from debate.quality._benchmark import calibrate_pairwise  # noqa: E402
from debate.quality._track import TrackRecords  # noqa: E402
from debate.quality._validity import format_report, read_pandalm, read_ukpconvarg  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "datasets"))
    parser.add_argument("--limit", type=int, default=64)
    parser.add_argument("--model", default="local")
    parser.add_argument("--base-url")
    parser.add_argument("--api-key-env", help='the key variable of --base-url ("" for none)')
    parser.add_argument("--store")
    parser.add_argument("--cache", help="response cache (SQLite): a re-run resumes from it")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--only", choices=["ukpconvarg", "pandalm"])
    args = parser.parse_args()
    data = Path(args.data)
    config = RunConfig(
        model=args.model, base_url=args.base_url, api_key_env=args.api_key_env, max_tokens=400
    )
    store = Path(args.store) if args.store else Path(tempfile.mkdtemp()) / "store.sqlite"
    records = TrackRecords(store)
    sets = {
        "ukpconvarg": lambda: read_ukpconvarg(
            data / "ukpconvarg1" / "ukpconvarg1_strict_sample1024_seed0.jsonl", args.limit
        ),
        "pandalm": lambda: read_pandalm(data / "pandalm" / "testset-v1.json", args.limit),
    }
    for name, load in sets.items():
        if args.only and name != args.only:
            continue
        items = load()
        start = time.perf_counter()
        report = asyncio.run(
            calibrate_pairwise(
                items,
                dataset=name,
                config=config,
                records=records,
                concurrency=args.concurrency,
                cache=args.cache,
            )
        )
        label = (
            f"{name}: {len(items)} items, model {args.model}, {time.perf_counter() - start:.0f} s"
        )
        print(format_report(report, label))
        print(flush=True)


if __name__ == "__main__":
    main()
