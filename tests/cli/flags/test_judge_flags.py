"""``debate judge``'s own argument."""

from __future__ import annotations

from tests.cli.flags.harness import (
    Harness,
    results,
)
from tests.support.helpers import transcript


def test_judge_transcript_is_what_is_judged(h: Harness) -> None:
    other = h.tmp / "other.json"
    other.write_text(transcript(2, 1, topic="Should we hire?").model_dump_json())
    run = h.run("judge", argv=["judge", str(other)])
    assert run.code == 0, run.err
    result = results("judge", run)[0]
    assert result.topic == "Should we hire?" and len(result.transcript.arguments) == 3
