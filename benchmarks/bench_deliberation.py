"""Does deliberation make the panel more valid, or only more agreed? Planted and recorded.

    python benchmarks/bench_deliberation.py [--debates 200] [--data ../shared/datasets]

Two measurements, both printed:

A. **Planted panels, the real code path.** Debates of 3 arguments a side whose true
   quality is drawn (uniform on 1-10); four judges score each argument as truth plus
   Gaussian noise of known size (sd 0.8, 1.2, 2.4, 3.0: two accurate judges, two noisy), on
   every rubric dimension alike. The panel runs as a user's would (``MultiJudgePanel`` with
   ``deliberation.rounds = 1``, judges as :class:`FunctionModel`), and in the deliberation
   call each judge follows a planted policy: ``keep`` (control), the noisy pair or the
   accurate pair copying the others' mean (``to_mean``: per dimension, rounded, and the
   others' most common standing), or everyone moving halfway to the others' mean. Validity
   is agreement with the planted truth: the share of debates whose ``lead`` (the side the
   weighted evidence favours) is the truly better side, and the share declared (winner)
   with the accuracy of those declarations; beside it alpha before and after and the
   herding share the result records.

B. **Recorded tables (HANNA), a simulation.** The recorded tables hold scores only, no
   callable judges, so deliberation cannot be *run* on them. What can be measured is what
   a herding rule would do to their validity: HANNA's five LLMs (prompt variant 1) scored
   1,056 stories on six criteria, beside three people. On each criterion, a story is split
   when the variance across the LLMs of their offset-corrected scores reaches 3.0 scaled to
   the 1-5 scale (3.0 x (4/9)^2); there the rule moves judges toward the leave-one-out
   mean of the others. Validity is the agreement with people: Pearson r of the panel's
   mean with the people's mean over stories, and the share of story pairs of one prompt
   (people's means differing) that the panel orders as people do. Alpha is interval alpha
   among the LLMs. This is a simulation of a policy on recorded scores, not a deliberation.

PandaLM's table (two judges' categorical verdicts) is left out: with two judges, herding
is one judge adopting the other's verdict, there is no score to move part way.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from debate import FunctionModel, MultiJudgePanel, RunConfig  # noqa: E402
from debate.models import Message  # noqa: E402
from debate.records import (  # noqa: E402
    DIMENSIONS,
    Argument,
    Closing,
    CrossExamination,
    Transcript,
)
from debate.stats import krippendorff_alpha  # noqa: E402

NOISE = {"technical": 0.8, "business": 1.2, "risk": 2.4, "general": 3.0}
"""Planted judges: the sd of each one's error (its known accuracy)."""
IDS = ["PRO-1", "PRO-2", "PRO-3", "CON-1", "CON-2", "CON-3"]
Rubric = dict[str, Any]
Policy = Callable[[str, Rubric, list[Rubric]], Rubric]


def transcript() -> Transcript:
    args = [Argument(id=i, claim=f"claim {i}", reasoning="because", evidence="data") for i in IDS]
    cross = [
        CrossExamination(
            round=1,
            by="CON" if a.startswith("PRO") else "PRO",
            target=a,
            challenge="why?",
            concession="",
            rebuttal="no",
        )
        for a in IDS
    ]
    closings = [Closing(side="PRO", statement="yes"), Closing(side="CON", statement="no")]
    return Transcript(
        topic="Should we adopt the plan?",
        arguments=args,
        cross_examinations=cross,
        closings=closings,
    )


def rubric(score: int, note: str = "n") -> Rubric:
    standing = "UPHELD" if score >= 7 else "REFUTED" if score <= 4 else "PARTIALLY_UPHELD"
    return {**{d: score for d in DIMENSIONS}, "standing": standing, "note": note}


def keep(role: str, own: Rubric, others: list[Rubric]) -> Rubric:
    return {"action": "keep", "reason": "my reading stands", "scores": None}


def to_mean(role: str, own: Rubric, others: list[Rubric], share: float = 1.0) -> Rubric:
    new = {
        d: int(np.clip(round(own[d] + share * (np.mean([o[d] for o in others]) - own[d])), 1, 10))
        for d in DIMENSIONS
    }
    standing = Counter(o["standing"] for o in others).most_common(1)[0][0]
    if share < 1.0:
        standing = rubric(new["logic"])["standing"]
    scores = {**new, "standing": standing, "note": "moved toward the panel"}
    return {"action": "revise", "reason": "the others' reading", "scores": scores}


def halfway(role: str, own: Rubric, others: list[Rubric]) -> Rubric:
    return to_mean(role, own, others, share=0.5)


POLICIES: dict[str, dict[str, Policy]] = {
    "keep (control)": dict.fromkeys(NOISE, keep),
    "noisy pair copies the others": {
        "technical": keep,
        "business": keep,
        "risk": to_mean,
        "general": to_mean,
    },
    "accurate pair copies the others": {
        "technical": to_mean,
        "business": to_mean,
        "risk": keep,
        "general": keep,
    },
    "everyone halfway to the others": dict.fromkeys(NOISE, halfway),
}


def judges_of(policy: dict[str, Policy], first: dict[str, dict[str, Rubric]]) -> FunctionModel:
    """A FunctionModel panel: planted first scores, then the policy in deliberation."""

    def reply(messages: list[Message], schema: Any) -> str:
        role = messages[1].content.split("# Your role: ", 1)[1].split(" ", 1)[0]
        props = schema.model_json_schema()
        if "scores" in props["properties"]:
            return json.dumps({"scores": first[role], "key_finding": "done"})
        ids = list(props["$defs"]["Decisions"]["properties"])
        decisions = {
            a: policy[role](role, first[role][a], [first[r][a] for r in first if r != role])
            for a in ids
        }
        return json.dumps({"decisions": decisions})

    return FunctionModel(reply)


def planted(debates: int) -> None:
    t = transcript()
    print(f"A. Planted panels: {debates} debates, judges' error sd {NOISE}")
    head = f"{'policy':34} {'lead right':>10} {'declared':>9} {'declared right':>15} "
    print(head + f"{'alpha before':>13} {'alpha after':>12} {'herding':>8} {'moves':>6}")
    base: dict[str, float] = {}
    for name, policy in POLICIES.items():
        lead_right = declared = declared_right = first_right = 0
        alphas: list[tuple[float, float]] = []
        toward = moves = 0
        for d in range(debates):
            rng = np.random.default_rng(d)
            truth = {a: rng.uniform(1, 10) for a in IDS}
            better = (
                "PRO"
                if np.mean([truth[a] for a in IDS[:3]]) > np.mean([truth[a] for a in IDS[3:]])
                else "CON"
            )
            first = {
                role: {
                    a: rubric(int(np.clip(round(truth[a] + rng.normal(0, sd)), 1, 10))) for a in IDS
                }
                for role, sd in NOISE.items()
            }
            config = RunConfig(model="function", deliberation={"rounds": 1})
            result = MultiJudgePanel(models=judges_of(policy, first), config=config).evaluate_sync(
                t, seed=d
            )
            s, fd = result.deliberation, result.first_decision
            assert s is not None and fd is not None
            lead_right += result.decision.lead == better
            first_right += fd.lead == better
            declared += result.decision.outcome == "winner"
            declared_right += (
                result.decision.outcome == "winner" and result.decision.winner == better
            )
            if s.alpha_before is not None and s.alpha_after is not None:
                alphas.append((s.alpha_before, s.alpha_after))
            toward += s.toward
            moves += len(s.moves)
        before, after = np.mean(alphas, axis=0) if alphas else (np.nan, np.nan)
        right = f"{declared_right / declared:.3f}" if declared else "-"
        herding = f"{toward / moves:.2f}" if moves else "-"
        print(
            f"{name:34} {lead_right / debates:>10.3f} {declared / debates:>9.3f} {right:>15} "
            f"{before:>13.3f} {after:>12.3f} {herding:>8} {moves:>6}"
        )
        base.setdefault("first", first_right / debates)
    print(f"(first round, before any deliberation: lead right {base['first']:.3f})\n")


def hanna(folder: Path) -> None:
    path = folder / "hanna" / "hanna_long.csv"
    if not path.is_file():
        print(f"B. HANNA: {path} not found; give --data (the folder holding hanna/)")
        return
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    judges = [c for c in rows[0] if c.endswith("_p1")]
    limit = 3.0 * (4 / 9) ** 2
    print(
        f"B. HANNA (recorded scores, simulated herding): judges {', '.join(judges)}; "
        f"split at offset-corrected variance >= {limit:.3f} (1-5 scale)"
    )
    print(
        f"{'criterion':11} {'rule':30} {'split':>6} {'r(people)':>10} {'pairs right':>12} "
        f"{'alpha':>7}"
    )
    for criterion in ("Relevance", "Coherence", "Empathy", "Surprise", "Engagement", "Complexity"):
        chosen = [r for r in rows if r["criterion"] == criterion]
        x = np.array([[float(r[j]) for r in chosen] for j in judges])  # judges x stories
        ok = (x >= 1).all(axis=0)  # a mean below 1 hides failed answers (see hanna.py)
        x = x[:, ok]
        people = np.array([float(r["human_mean"]) for r in chosen])[ok]
        prompt = np.array([int(r["story_id"]) % 96 for r in chosen])[ok]
        corrected = x - x.mean(axis=1, keepdims=True) + x.mean()
        split = corrected.var(axis=0, ddof=1) >= limit
        for name, rule in _hanna_rules(x).items():
            y = x.copy()
            y[:, split] = rule[:, split]
            mean = y.mean(axis=0)
            r = float(np.corrcoef(mean, people)[0, 1])
            print(
                f"{criterion:11} {name:30} {split.mean():>6.1%} {r:>10.3f} "
                f"{_pairs(mean, people, prompt):>12.3f} "
                f"{krippendorff_alpha(y, 'interval'):>7.3f}"
            )


def _hanna_rules(x: np.ndarray) -> dict[str, np.ndarray]:
    """Each judge's score after a rule (applied on split stories only)."""
    n = x.shape[0]
    loo = (x.sum(axis=0, keepdims=True) - x) / (n - 1)  # the others' mean
    away = np.abs(x - loo).mean(axis=1)  # how far each judge sits from the others
    outliers = np.argsort(away)[-2:]
    copy_outliers = x.copy()
    copy_outliers[outliers] = loo[outliers]
    return {
        "none (as recorded)": x,
        "everyone halfway to others": x + 0.5 * (loo - x),
        "everyone copies others": loo,
        "2 farthest judges copy others": copy_outliers,
    }


def _pairs(mean: np.ndarray, people: np.ndarray, prompt: np.ndarray) -> float:
    """Share of story pairs of one prompt, people's means differing, ordered as people do."""
    right = total = 0
    for p in np.unique(prompt):
        at = np.flatnonzero(prompt == p)
        m, h = mean[at][:, None] - mean[at][None, :], people[at][:, None] - people[at][None, :]
        upper = np.triu(np.ones_like(m, dtype=bool), 1) & (h != 0)
        right += int((np.sign(m[upper]) == np.sign(h[upper])).sum())
        total += int(upper.sum())
    return right / total if total else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--debates", type=int, default=200, help="planted debates per policy")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "datasets")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # the panel's per-debate warnings; the table says it
    planted(args.debates)
    hanna(args.data)


if __name__ == "__main__":
    main()
