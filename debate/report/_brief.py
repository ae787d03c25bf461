"""The validity report in a few sentences, for someone who has not read the tables yet.

``debate validity --brief`` prints this instead of the Markdown tables (``make demo`` ends
with it): how accurate the best single judge is where it calls a winner, how accurate the
panel is at the same coverage and on every item, and, with ``--target-agreement``, the
guarantee the chosen policy gives and the coverage it bought. Every figure is one the full
report holds; nothing is computed here.
"""

from __future__ import annotations

from debate.records import EqualCoverage, Estimate, RiskCoverage, ValidityReport

DEFAULT_BRIEF_PANEL = "labels"
"""The panel the brief speaks of: label-trained weights, learned on the other folds (the
panel a policy is chosen for)."""
PANEL_NAMES = {
    "labels": "label-trained weights",
    "equal": "equal weights",
    "latent": "latent weights",
}
"""How the brief names the report's panels."""


def render_validity_brief(report: ValidityReport, panel: str = DEFAULT_BRIEF_PANEL) -> str:
    """A few plain lines: best judge, panel at the judge's coverage and at 100 %, guarantee.

    Args:
        report: A validity report (with its policy when one was chosen).
        panel: Which panel of the report to speak of.

    Returns:
        Lines of text ending in a newline; a figure the report lacks is left out or said to
        be undefined, never made up.
    """
    unit = "pairs of options" if report.kind == "scores" else "items"
    dimension = f" ({report.dimension})" if report.dimension else ""
    shown = PANEL_NAMES.get(panel, panel)
    lines = [
        f"{report.source}{dimension}: {report.units:,} {unit}, {report.labelled:,} with a "
        f"people's majority; cross-fitted over {report.folds} folds (weights and calibration "
        "learned on the other folds)"
    ]
    best = report.best_judge
    if best is not None:
        row = report.method(best)
        lines.append(
            f"best single judge, {best}: agrees with people on {_est(row.declared_accuracy)} "
            f"of the {_share(row.coverage.value)} of {unit} where it picks a side"
        )
    same = _comparison(report, panel, "judge")
    if same is not None:
        lines.append(
            f"the panel ({shown}) on its most confident {_share(same.coverage)}: "
            f"{_est(same.panel_accuracy)}, {_signed(same.difference)} against {same.judge}"
        )
    everything = _curve_end(report, panel)
    if everything is not None:
        lines.append(f"the panel ({shown}) on all {unit} (100 %): {everything:.3f}")
    policy = report.policy
    if policy is not None:
        agreement = "" if policy.agreement is None else f"; {policy.agreement:.3f} agree there"
        lines.append(
            f"with --target-agreement {policy.target_agreement:g} --risk {policy.risk:g} the "
            f"policy declares {_share(policy.coverage)} of the {policy.labelled_units:,} "
            f"calibration units{agreement}; the other {_share(1.0 - policy.coverage)} would go "
            "to people"
        )
        lines.append(f"guarantee: {policy.guarantee}, provided that {policy.condition}")
    return "\n".join(lines) + "\n"


def _comparison(report: ValidityReport, panel: str, basis: str) -> EqualCoverage | None:
    for row in report.equal_coverage:
        if row.panel == panel and row.basis == basis and row.coverage is not None:
            return row
    return None


def _curve_end(report: ValidityReport, panel: str) -> float | None:
    """The panel's accuracy at 100 % coverage: the end of its risk-coverage curve."""
    curve: RiskCoverage | None = next(
        (c for c in report.risk_coverage if c.kind == "panel" and c.method == panel), None
    )
    if curve is None or not curve.curve or curve.curve[-1].coverage < 1.0 - 1e-9:
        return None
    return curve.curve[-1].accuracy


def _est(estimate: Estimate) -> str:
    return estimate.text()


def _signed(estimate: Estimate) -> str:
    if estimate.value is None or estimate.low is None or estimate.high is None:
        return estimate.text()
    return f"{estimate.value:+.3f} [{estimate.low:+.3f}, {estimate.high:+.3f}]"


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"
