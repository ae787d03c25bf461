"""How stable a verdict is: the same transcript judged again N times, other seeds each time.

One result is one draw: the judges sample, and the presentation orders are drawn from the
seed. Judging the recorded transcript again with the recorded panel, N times with N other
seeds, shows how often the verdict would have come out otherwise:

* the **flip rate**: the share of runs whose verdict (outcome and winner) differs from the
  runs' modal verdict, with its Wilson 95 % interval. The modal verdict rather than the
  original's, because the original may have been judged by another model or under other
  settings, and the mode is the estimate of the verdict this panel gives; the share of runs
  that differ from the original's verdict is reported beside it;
* each judge's flip rate: the share of runs (where it scored) whose lead (the sign of its
  evidence, :mod:`debate.panel._evidence`) differs from its modal lead;
* for a council, **rank stability**: Kendall's W over the runs' rankings of the candidates
  (:func:`debate.stats.kendall_w`) and how often the top candidate differs from the modal
  top;
* the cost of the N runs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal

from debate.api import judge_transcript
from debate.council import run_council
from debate.quality._audit import Estimate, wilson
from debate.records import CouncilResult, DebateResult, Frozen, RunConfig, Usage, derive_seed
from debate.runtime import ModelPool, Run
from debate.stats import kendall_w

NO_LEAD = "none"
"""A judge's lead when its evidence is 0 (a tie), and a verdict's winner without one."""


class RunVerdict(Frozen):
    """One re-judging of the transcript."""

    run: int
    seed: int
    outcome: str
    winner: str | None
    verdict: str
    """``outcome`` and ``winner`` as one label (``winner PRO``, ``too_close``)."""
    leads: dict[str, str | None]
    """Each judge's lead (PRO, CON or none); None for a judge that did not score."""
    calls: int
    cost_usd: float | None


class CouncilRun(Frozen):
    """One re-ranking of the candidates."""

    run: int
    seed: int
    ranking: list[str]
    """The ranked candidates, best first."""
    calls: int
    cost_usd: float | None


class JudgeFlips(Frozen):
    """How often one judge's lead moved between runs."""

    judge: str
    modal: str | None
    """Its most frequent lead over the runs where it scored."""
    flip_rate: Estimate
    """Share of those runs whose lead differs from ``modal``, with its Wilson interval."""


class Stability(Frozen):
    """What ``debate stability`` reports."""

    kind: Literal["debate", "council"]
    source: str
    """The result file re-judged."""
    runs: int
    original: str
    """The verdict (or top candidate) of the given result."""
    modal: str
    """The most frequent verdict (or top candidate) over the runs; the first seen on a tie."""
    flip_rate: Estimate
    """Share of runs whose verdict (top candidate) differs from ``modal``; Wilson 95 %."""
    differs_from_original: float
    """Share of runs whose verdict (top candidate) differs from the original's."""
    verdicts: list[RunVerdict] = []
    judges: list[JudgeFlips] = []
    rankings: list[CouncilRun] = []
    kendall_w: float | None = None
    """Kendall's W (tie-corrected) of the runs' rankings; a council's only."""
    calls: int
    cost_usd: float | None
    """Of the N runs together; None when a model used is not priced."""


def run_seeds(base: int, runs: int) -> list[int]:
    """The seeds of ``runs`` re-judgings: hashes of ``base`` and the run's number.

    Reproducible from ``base``, and none is the base seed itself, so run 1 is not a
    replay of the original (nor served from its cache).
    """
    return [derive_seed(base, f"stability:{i}") for i in range(1, runs + 1)]


def verdict_of(outcome: str, winner: str | None) -> str:
    """Outcome and winner as one label."""
    return f"winner {winner}" if outcome == "winner" else outcome


def _lead(x: float | None) -> str:
    if x is None or x == 0:
        return NO_LEAD
    return "PRO" if x > 0 else "CON"


def _modal(labels: Sequence[str]) -> str:
    """The most frequent label; on a tie, the one seen first."""
    counts = Counter(labels)
    return max(labels, key=lambda label: (counts[label], -labels.index(label)))


def _cost_fields(usages: Sequence[Usage]) -> dict[str, Any]:
    """The runs' calls and cost together (no cost when a model used is not priced)."""
    costs = [u.cost_usd for u in usages]
    cost = None if any(c is None for c in costs) else float(sum(c for c in costs if c))
    return {"calls": sum(u.calls for u in usages), "cost_usd": cost}


def _flips(labels: Sequence[str], reference: str) -> Estimate:
    return wilson(sum(label != reference for label in labels), len(labels), minimum=1)


def _flip_fields(labels: Sequence[str], original: str) -> dict[str, Any]:
    """The runs' modal label, the flip rate against it, and the share unlike ``original``."""
    modal = _modal(labels)
    return {
        "runs": len(labels),
        "original": original,
        "modal": modal,
        "flip_rate": _flips(labels, modal),
        "differs_from_original": sum(label != original for label in labels) / len(labels),
    }


async def rejudge(
    result: DebateResult, config: RunConfig, seeds: Sequence[int], pool: ModelPool
) -> list[DebateResult]:
    """Judge ``result``'s transcript once per seed, one run after the other."""
    return [
        await judge_transcript(result.transcript, config=config, seed=s, run=Run(pool=pool))
        for s in seeds
    ]


async def rerank(
    result: CouncilResult, config: RunConfig, seeds: Sequence[int], pool: ModelPool
) -> list[CouncilResult]:
    """Rank ``result``'s candidates once per seed, one run after the other."""
    return [
        await run_council(
            result.question, result.candidates, config=config, seed=s, run=Run(pool=pool)
        )
        for s in seeds
    ]


def debate_stability(
    original: DebateResult, runs: Sequence[DebateResult], source: str
) -> Stability:
    """The flip rates of ``runs``, re-judgings of ``original``'s transcript."""
    verdicts = [
        RunVerdict(
            run=i + 1,
            seed=r.seed,
            outcome=r.decision.outcome,
            winner=r.decision.winner,
            verdict=verdict_of(r.decision.outcome, r.decision.winner),
            leads={
                e.judge: _lead(r.decision.judge_evidence.get(e.judge))
                if e.status == "scored"
                else None
                for e in r.evaluations
            },
            calls=r.usage.calls,
            cost_usd=r.usage.cost_usd,
        )
        for i, r in enumerate(runs)
    ]
    labels = [v.verdict for v in verdicts]
    names = list(dict.fromkeys(name for v in verdicts for name in v.leads))
    judges = []
    for name in names:
        leads = [lead for v in verdicts if (lead := v.leads.get(name)) is not None]
        own = _modal(leads) if leads else None
        judges.append(JudgeFlips(judge=name, modal=own, flip_rate=_flips(leads, own or NO_LEAD)))
    return Stability(
        kind="debate",
        source=source,
        **_flip_fields(labels, verdict_of(original.decision.outcome, original.decision.winner)),
        verdicts=verdicts,
        judges=judges,
        **_cost_fields([r.usage for r in runs]),
    )


def _ranks(result: CouncilResult, candidates: Sequence[str]) -> list[float]:
    """Each candidate's rank; the unranked share the place after the last ranked one."""
    placed = {e.candidate: float(e.rank) for e in result.rankings}
    last = float(len(result.rankings) + 1)
    return [placed.get(c, last) for c in candidates]


def _top(result: CouncilResult) -> str:
    return result.rankings[0].candidate if result.rankings else NO_LEAD


def council_stability(
    original: CouncilResult, runs: Sequence[CouncilResult], source: str
) -> Stability:
    """Kendall's W of ``runs``' rankings and how often their top candidate changes."""
    candidates = [c.id for c in original.candidates]
    return Stability(
        kind="council",
        source=source,
        **_flip_fields([_top(r) for r in runs], _top(original)),
        rankings=[
            CouncilRun(
                run=i + 1,
                seed=r.seed,
                ranking=[e.candidate for e in r.rankings],
                calls=r.usage.calls,
                cost_usd=r.usage.cost_usd,
            )
            for i, r in enumerate(runs)
        ],
        kendall_w=kendall_w([_ranks(r, candidates) for r in runs]),
        **_cost_fields([r.usage for r in runs]),
    )


def stability_text(report: Stability) -> str:
    """The report in a few lines."""

    def rate(e: Estimate) -> str:
        if e.value is None:
            return f"- ({e.note})"
        return f"{e.value:.3f} (95% CI {e.low:.3f}-{e.high:.3f}, n={e.n})"

    what = "verdict" if report.kind == "debate" else "top candidate"
    lines = [
        f"Stability of {report.source}: {report.runs} runs, other seeds each",
        f"Original {what}: {report.original}; modal {what}: {report.modal}",
        f"Flip rate (runs whose {what} differs from the modal one): {rate(report.flip_rate)}",
        f"Runs differing from the original: {report.differs_from_original:.3f}",
    ]
    if report.kind == "debate":
        counts = Counter(v.verdict for v in report.verdicts)
        lines.append("Verdicts: " + ", ".join(f"{k} x{n}" for k, n in counts.most_common()))
        for j in report.judges:
            lines.append(
                f"  judge {j.judge:<12} modal lead {j.modal}, flip rate {rate(j.flip_rate)}"
            )
    else:
        w = "-" if report.kendall_w is None else f"{report.kendall_w:.3f}"
        lines.append(f"Kendall's W over the runs' rankings: {w}")
        counts = Counter(r.ranking[0] if r.ranking else NO_LEAD for r in report.rankings)
        lines.append("Top candidates: " + ", ".join(f"{k} x{n}" for k, n in counts.most_common()))
    cost = "not priced" if report.cost_usd is None else f"${report.cost_usd:.4f}"
    lines.append(f"Cost: {report.calls} calls, {cost}")
    return "\n".join(lines)
