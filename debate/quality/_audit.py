"""Bias audit across recorded runs: position, length, first-position wins, self-preference.

Every figure comes with its sample size and a 95% interval; below ``MIN_SAMPLE``
observations the audit says the sample is too small instead of printing a number as if it
meant something.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from debate.records._transcript import Frozen
from debate.storage._runs import RunStore

MIN_SAMPLE = 30
Z95 = 1.959963984540054


class Estimate(Frozen):
    """One audited figure."""

    value: float | None
    low: float | None
    high: float | None
    n: int
    note: str | None = None
    """Why there is no value (too small a sample, no variation, not applicable)."""

    def text(self, digits: int = 3) -> str:
        """Human-readable form."""
        if self.value is None:
            return f"- ({self.note}; n={self.n})"
        assert self.low is not None and self.high is not None
        return (
            f"{self.value:+.{digits}f} [{self.low:+.{digits}f}, {self.high:+.{digits}f}] n={self.n}"
        )


class JudgeAudit(Frozen):
    """The audit of one judge identity (role x model)."""

    role: str
    model: str
    primacy_correlation: Estimate
    """Pearson r of calibrated score with earliness (positive: favours what it reads first)."""
    length_correlation: Estimate
    """Pearson r of calibrated score with argument length (positive: favours longer text)."""
    first_side_win_rate: Estimate
    """Share of readings in which the side shown first got the higher mean score (0.5 = fair)."""
    self_preference: Estimate
    """Mean score of arguments its own model wrote minus the others' (0 = fair)."""


def too_small(n: int, minimum: int = MIN_SAMPLE) -> Estimate:
    """The answer when there are too few observations to say anything."""
    return Estimate(value=None, low=None, high=None, n=n, note=f"sample too small (< {minimum})")


def correlation(x: Sequence[float], y: Sequence[float]) -> Estimate:
    """Pearson r with a Fisher-z 95% interval."""
    n = len(x)
    if n < MIN_SAMPLE:
        return too_small(n)
    xa, ya = np.asarray(x, float), np.asarray(y, float)
    if np.ptp(xa) == 0 or np.ptp(ya) == 0:
        return Estimate(value=None, low=None, high=None, n=n, note="no variation")
    r = float(np.corrcoef(xa, ya)[0, 1])
    r = max(min(r, 1 - 1e-12), -1 + 1e-12)
    half = Z95 / math.sqrt(n - 3)
    z = math.atanh(r)
    return Estimate(value=r, low=math.tanh(z - half), high=math.tanh(z + half), n=n)


def wilson(successes: int, n: int, minimum: int = MIN_SAMPLE) -> Estimate:
    """A proportion with its Wilson 95% interval (too small a sample below ``minimum``)."""
    if n < max(minimum, 1):
        return too_small(n, max(minimum, 1))
    p = successes / n
    denom = 1 + Z95**2 / n
    centre = (p + Z95**2 / (2 * n)) / denom
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / denom
    return Estimate(value=p, low=centre - half, high=centre + half, n=n)


def mean_difference(a: Sequence[float], b: Sequence[float]) -> Estimate:
    """Difference of means with a normal (Welch) 95% interval."""
    n = len(a) + len(b)
    if not a or not b:
        return Estimate(value=None, low=None, high=None, n=n, note="no own-model arguments")
    if len(a) < MIN_SAMPLE or len(b) < MIN_SAMPLE:
        return too_small(min(len(a), len(b)))
    aa, bb = np.asarray(a, float), np.asarray(b, float)
    diff = float(aa.mean() - bb.mean())
    se = math.sqrt(aa.var(ddof=1) / len(aa) + bb.var(ddof=1) / len(bb))
    return Estimate(value=diff, low=diff - Z95 * se, high=diff + Z95 * se, n=n)


def audit(store: RunStore) -> list[JudgeAudit]:
    """Audit every judge identity in the store."""
    groups: dict[tuple[str, str], list[dict[str, object]]] = defaultdict(list)
    for row in store.observations():
        groups[(str(row["role"]), str(row["model"]))].append(row)
    return [audit_judge(role, model, rows) for (role, model), rows in sorted(groups.items())]


def audit_judge(role: str, model: str, rows: list[dict[str, object]]) -> JudgeAudit:
    """The four figures for one judge identity."""
    score = [float(r["calibrated_score"]) for r in rows]  # type: ignore[arg-type]
    earliness = [
        int(r["arguments_shown"]) - 1 - int(r["shown_position"])  # type: ignore[call-overload]
        for r in rows
    ]
    length = [float(r["length_chars"]) for r in rows]  # type: ignore[arg-type]
    readings: dict[tuple[object, object, object], dict[str, list[float]]] = defaultdict(
        lambda: {"first": [], "second": []}
    )
    for r in rows:
        key = (r["run_id"], r["judge"], r["reading"])
        which = "first" if r["side"] == r["side_shown_first"] else "second"
        readings[key][which].append(float(r["calibrated_score"]))  # type: ignore[arg-type]
    wins = sum(
        1
        for v in readings.values()
        if v["first"] and v["second"] and np.mean(v["first"]) > np.mean(v["second"])
    )
    decided = sum(
        1
        for v in readings.values()
        if v["first"] and v["second"] and np.mean(v["first"]) != np.mean(v["second"])
    )
    own = [float(r["calibrated_score"]) for r in rows if r["author_model"] == model]  # type: ignore[arg-type]
    others = [
        float(r["calibrated_score"])  # type: ignore[arg-type]
        for r in rows
        if r["author_model"] is not None and r["author_model"] != model
    ]
    return JudgeAudit(
        role=role,
        model=model,
        primacy_correlation=correlation(score, earliness),
        length_correlation=correlation(score, length),
        first_side_win_rate=wilson(wins, decided),
        self_preference=mean_difference(own, others),
    )


def format_audit(rows: list[JudgeAudit]) -> str:
    """A plain-text table of the audit."""
    if not rows:
        return "no recorded runs in the store yet"
    lines = []
    for r in rows:
        lines.append(f"{r.role} x {r.model}")
        lines.append(f"  primacy correlation      {r.primacy_correlation.text()}")
        lines.append(f"  length correlation       {r.length_correlation.text()}")
        lines.append(f"  first-shown side wins    {r.first_side_win_rate.text()}")
        lines.append(f"  self-preference          {r.self_preference.text()}")
    return "\n".join(lines)
