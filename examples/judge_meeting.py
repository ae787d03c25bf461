"""Judge a transcript people wrote in a meeting: no debaters at all, only the panel.

python examples/judge_meeting.py            # offline placeholder model
python examples/judge_meeting.py local      # the embedded model
"""

import sys
from pathlib import Path

from debate import RunConfig, judge_transcript_sync, load_transcript, write_report, write_result

model = sys.argv[1] if len(sys.argv) > 1 else "scripted"
transcript = load_transcript(Path(__file__).with_name("meeting_transcript.json"))
result = judge_transcript_sync(transcript, config=RunConfig(model=model), seed=11)
print(f"{result.decision.outcome}: {result.decision.winner or 'no winner'}")
for evaluation in result.evaluations:
    standings = {k: v.standing for k, v in (evaluation.scores or {}).items()}
    print(f"  {evaluation.judge:<10} {evaluation.status:<9} {standings}")
print(
    "report:",
    write_report(result, "meeting-out")[1],
    "result:",
    write_result(result, "meeting-out"),
)
