"""Rank three candidate answers with the council (offline placeholder model by default)."""

import sys

from debate import Candidate, RunConfig, run_council_sync

model = sys.argv[1] if len(sys.argv) > 1 else "scripted"
candidates = [
    Candidate(id="terse", text="Use PostgreSQL."),
    Candidate(
        id="reasoned",
        text="PostgreSQL: transactions for billing, mature tooling, and our team knows it.",
    ),
    Candidate(id="wrong", text="Use a spreadsheet; databases are overkill for money."),
]
result = run_council_sync(
    "Which database should hold our billing ledger?",
    candidates,
    config=RunConfig(model=model),
    seed=5,
)
for entry in result.rankings:
    print(
        entry.rank,
        entry.candidate,
        entry.mean_score,
        entry.std_error,
        entry.borda,
        entry.tied_with_next,
    )
print(result.interpretation)
