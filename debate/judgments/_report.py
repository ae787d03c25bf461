"""The validity report as a page and as Markdown: does the panel beat its best judge?

One self-contained HTML page (the debate report's CSS, hand-written inline SVG, no script,
no URL) with the guarantee of a chosen policy, every method's figures and intervals, the
risk-coverage plot of every panel and every judge, the panels' reliability diagrams, the
comparisons at equal coverage, split detection, alpha among judges beside alpha among
people, and the notes on what the numbers do not show. The Markdown carries the same
tables, for the README to quote.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from debate.records import (
    Calibration,
    EqualCoverage,
    Estimate,
    MethodRow,
    SplitDetection,
    ValidityReport,
)
from debate.report import (
    CSS,
    cell,
    esc,
    guarantee_html,
    guarantee_markdown,
    key_values,
    md_table,
    panel_inks,
    reliability_caption,
    reliability_figures,
    risk_coverage_svg,
    section,
    table,
)
from debate.stats import band, fmt

VALIDITY_CSS = """
.diagrams { display:flex; flex-wrap:wrap; gap:8px 24px; }
figure.reliability { margin:0; width:300px; max-width:100%; }
figure.reliability figcaption { font-size:13px; color:var(--muted); }
.nowrap { white-space:nowrap; }
"""
"""The page's additions to the report's CSS: reliability diagrams side by side."""


def _method_head(report: ValidityReport) -> list[str]:
    head = ["method", "kind", "n", "accuracy", "coverage", "declared accuracy"]
    if report.kind == "scores":
        head += ["Spearman", "Kendall", "pairwise accuracy"]
    return head


def _figure(estimate: Estimate | None) -> str:
    return "—" if estimate is None else estimate.text()


def _figure_html(estimate: Estimate | None) -> str:
    """The value, and its interval under it in small type (keeps wide tables on a page)."""
    if estimate is None or estimate.value is None or estimate.low is None:
        return esc(_figure(estimate))
    assert estimate.high is not None
    return (
        f"{estimate.value:.3f}"
        f'<span class="judge-meta">[{estimate.low:.3f}, {estimate.high:.3f}]</span>'
    )


def _method_cells(
    row: MethodRow, report: ValidityReport, name: str, figure: Callable[[Estimate | None], str]
) -> list[str]:
    kind: str = "best judge" if row.name == report.best_judge else row.kind
    kind += " (gated)" if row.gated else ""
    cells = [
        name,
        kind,
        str(row.accuracy.n),
        figure(row.accuracy),
        figure(row.coverage),
        figure(row.declared_accuracy),
    ]
    if report.kind == "scores":
        cells += [figure(row.spearman), figure(row.kendall), figure(row.pairwise_accuracy)]
    return cells


EQUAL_HEAD = [
    "gated panel",
    "basis",
    "coverage",
    "panel accuracy",
    "best judge",
    "judge accuracy",
    "panel − judge",
]
SPLIT_HEAD = ["gated panel", "flagged", "people split", "precision", "recall", "base rate", "lift"]
BASIS_TEXT = {
    "gate": "at the gate's coverage",
    "judge": "at the best judge's own coverage",
}
"""How each comparison's coverage was chosen (``fixed``: at its share of labelled units)."""


def basis_text(c: EqualCoverage) -> str:
    """``at the gate's coverage``, ``at the best judge's own coverage`` or ``at 80 %``."""
    if c.basis == "fixed":
        return "at a fixed share" if c.coverage is None else f"at {c.coverage:.0%}"
    return BASIS_TEXT[c.basis]


def _equal_cells(
    c: EqualCoverage, name: Callable[[str], str], figure: Callable[[Estimate | None], str]
) -> list[str]:
    return [
        name(c.panel),
        name(basis_text(c)),
        "undefined" if c.coverage is None else f"{c.coverage:.1%}",
        figure(c.panel_accuracy),
        name(c.judge),
        figure(c.judge_accuracy),
        figure(c.difference),
    ]


def _split_cells(s: SplitDetection, name: Callable[[str], str]) -> list[str]:
    return [
        name(s.method),
        f"{s.flagged} of {s.units}",
        str(s.people_split),
        s.precision.text(),
        s.recall.text(),
        s.base_rate.text(),
        s.lift.text(),
    ]


# --- the page -----------------------------------------------------------------------------


def _summary(report: ValidityReport) -> str:
    facts = [
        ("units", f"{report.units:,}"),
        ("labelled by people", f"{report.labelled:,}"),
        ("items", f"{report.items:,}"),
        ("folds", str(report.folds)),
        ("bootstrap", f"{report.bootstrap:,} × seed {report.seed}"),
        ("best judge", report.best_judge or "none"),
    ]
    items = "".join(f"<div><dt>{esc(k)}</dt><dd>{esc(v)}</dd></div>" for k, v in facts)
    what = f"{report.kind}" + (f", dimension {report.dimension}" if report.dimension else "")
    return (
        '<section id="summary" class="verdict outcome-insufficient">'
        '<p class="kicker">Validity against people</p>'
        "<h1>Does the panel beat its best judge?</h1>"
        f'<p class="topic">{esc(report.source)} ({esc(what)})</p>'
        f'<dl class="facts">{items}</dl></section>'
    )


def _methods(report: ValidityReport) -> str:
    rows = [_method_cells(r, report, esc(r.name), _figure_html) for r in report.methods]
    numeric = set(range(2, len(_method_head(report))))
    return section(
        "methods",
        "Every panel and every single judge",
        table(_method_head(report), rows, numeric),
        "Accuracy is against people's majority on the units where people have one (a tie "
        "called against a majority counts wrong); coverage is the share of those units given "
        "a declared verdict; declared accuracy is the accuracy there. Brackets: 95 % "
        "bootstrap intervals over items.",
    )


def _risk(report: ValidityReport) -> str:
    rows = [_equal_cells(c, esc, _figure_html) for c in report.equal_coverage]
    equal = table(EQUAL_HEAD, rows, {2, 3, 5, 6})
    notes = "".join(
        f'<p class="note">{esc(note)}</p>'
        for note in dict.fromkeys(
            f"{c.panel} vs {c.judge}: {c.note}" for c in report.equal_coverage if c.note
        )
    )
    return section(
        "risk-coverage",
        "Risk and coverage: every panel and every judge",
        f'<div class="figure">{risk_coverage_svg(report)}</div>'
        + f'<p class="note">{esc(CURVES_NOTE)}</p>'
        + "<h3>At equal coverage</h3>"
        + f'<p class="note">{esc(EQUAL_NOTE)}</p>'
        + equal
        + notes,
        "Each curve is the accuracy against people of a method's most confident verdicts, "
        "as more of them are kept. A panel's curve ranks its lead on every labelled unit by "
        "p_agree, abstentions included, so it runs to 100 %; a judge's ranks the calls it "
        "declares by its own confidence and ends at the share it declares.",
    )


CURVES_NOTE = (
    "Bold: the gated panels; dashed: the best single judge; thin grey: every other judge "
    "(hover a line for its name). A judge without confidence gradation is a flat line at "
    "its accuracy. Curves start at their 10th call. Dots: each gated panel's declared "
    "verdicts at its own coverage (filled) and the best judge's most confident calls at that "
    "coverage (hollow)."
)
EQUAL_NOTE = (
    "At the gate's coverage: the gated panel's declared verdicts against as many of the best "
    "judge's most confident calls. At the best judge's own coverage: every call the judge "
    "declares against as many of the panel's leads, most p_agree first. At a fixed share: "
    "both sides' most confident calls. Differences are paired, with 95 % bootstrap "
    "intervals over items."
)


def _reliability(report: ValidityReport) -> str:
    if not report.calibration:
        return ""
    return section(
        "reliability",
        "Is p_agree a probability?",
        f'<div class="diagrams">{reliability_figures(report.calibration, panel_inks(report))}'
        "</div>",
        "Per panel, the labelled units binned by p_agree against the share on which people's "
        "majority agreed with the panel's lead. On the dashed diagonal p_agree is what it "
        "says; dot areas and the bars under each chart give the units per bin. ECE: the "
        "units' weighted gap between p_agree and agreement, with its 95 % interval.",
    )


def _splits(report: ValidityReport) -> str:
    rows = [_split_cells(s, esc) for s in report.split_detection]
    return section(
        "splits",
        "Do the panel's splits find where people disagree?",
        table(SPLIT_HEAD, rows, {1, 2, 3, 4, 5, 6}),
        "A flag is a too_close or irreconcilable outcome; people split where their majority "
        "holds less than 3/4 of them. Lift is precision over the base rate: 1 is chance.",
    )


def _alpha(value: float | None) -> str:
    return fmt(value) if value is None else f"{fmt(value)} · {band(value)}"


def _agreement(report: ValidityReport) -> str:
    a = report.agreement
    return section(
        "agreement",
        "Alpha among judges beside alpha among people",
        key_values(
            [
                ("alpha among judges", _alpha(a.alpha_judges)),
                ("alpha among people", _alpha(a.alpha_people)),
                ("level", a.level),
                ("independent votes", votes_text(report)),
            ]
        )
        + (
            f'<p class="note">{esc(report.judge_correlation.warning)}</p>'
            if report.judge_correlation and report.judge_correlation.warning
            else ""
        ),
        "Krippendorff's alpha on the same items. Judges that agree with each other more than "
        "people do are consistent, not necessarily right. Independent votes: how many "
        "uncorrelated judges the panel's errors against people are worth (design effect of "
        "their mean pairwise error correlation).",
    )


def votes_text(report: ValidityReport) -> str:
    """``3.91 of 4 judges (interval 3.50 to 4.00), from errors on 812 units``."""
    found = report.judge_correlation
    if found is None or found.effective_votes is None:
        return "undefined"
    text = f"{found.effective_votes:.2f} of {len(found.correlation)} judges"
    if found.effective_votes_ci is not None:
        text += (
            f" (interval {found.effective_votes_ci[0]:.2f} to {found.effective_votes_ci[1]:.2f})"
        )
    return text + f", from errors on {found.units} units"


def _weights(report: ValidityReport) -> str:
    if not report.weights:
        return ""
    judges = sorted({j for folds in report.weights.values() for w in folds for j in w})
    rows = [
        [esc(kind), str(i + 1), *(fmt(w.get(j), 3) if j in w else "—" for j in judges)]
        for kind, folds in report.weights.items()
        for i, w in enumerate(folds)
    ]
    head = ["weighting", "fold", *judges]
    return section(
        "weights",
        "Judge weights per fold",
        table(head, rows, set(range(1, len(head)))),
        "Each fold's units were decided with these weights, learned on the other folds.",
    )


def _notes(report: ValidityReport) -> str:
    items = "".join(f"<li>{esc(n)}</li>" for n in report.notes)
    return section(
        "notes", "What the numbers do and do not show", f'<ul class="reasons">{items}</ul>'
    )


def render_validity_html(report: ValidityReport) -> str:
    """The whole HTML page of a validity report (no script, no external reference)."""
    sections = [
        _summary(report),
        guarantee_html(report.policy) if report.policy is not None else _refusal(report),
        _methods(report),
        _risk(report),
        _reliability(report),
        _splits(report),
        _agreement(report),
        _weights(report),
        _notes(report),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Validity report: {esc(report.source)}</title>"
        f"<style>{CSS}{VALIDITY_CSS}</style></head>"
        f"<body><main>{''.join(sections)}<footer>debate validity · {esc(report.source)} · "
        f"seed {report.seed}</footer></main></body></html>\n"
    )


# --- Markdown -----------------------------------------------------------------------------


def _points_table(report: ValidityReport) -> list[str]:
    """The curves at 10 % steps: the panels and the best judge (every judge's is in the JSON)."""
    curves = [
        rc for rc in report.risk_coverage if rc.kind == "panel" or rc.method == report.best_judge
    ]
    if not curves:
        return []
    head = ["most confident", *(cell(rc.method) for rc in curves)]
    rows = []
    for i in range(10):
        row = [f"{(i + 1) * 10} %"]
        for rc in curves:
            p = rc.points[i] if i < len(rc.points) else None
            row.append("—" if p is None else f"{p.accuracy:.3f} (cov. {p.coverage:.1%})")
        rows.append(row)
    return [
        "",
        "Accuracy of the most confident verdicts (coverage of labelled units); a panel ranks "
        "its lead on every unit by p_agree, the best judge its declared calls by its own "
        "confidence (every judge's curve is in the JSON report):",
        "",
        md_table(head, rows),
    ]


def _bin_cell(c: Calibration, low: float, high: float) -> str:
    for b in c.bins:
        if (b.low, b.high) == (low, high) and b.confidence is not None and b.accuracy is not None:
            return f"{b.confidence:.2f} → {b.accuracy:.2f} (n {b.n})"
    return "—"


def _reliability_table(calibrations: Sequence[Calibration]) -> list[str]:
    """Per bin of p_agree, each panel's mean p_agree, share people agreed with, units."""
    if not calibrations:
        return []
    edges = sorted({(b.low, b.high) for c in calibrations for b in c.bins if b.n})
    head = ["p_agree", *(cell(c.method) for c in calibrations)]
    rows = [
        [f"{low:.1f}–{high:.1f}", *(_bin_cell(c, low, high) for c in calibrations)]
        for low, high in edges
    ]
    return [
        "",
        "Reliability: per bin of p_agree, mean p_agree → share people agreed with (units):",
        "",
        md_table(head, rows),
        "",
        *(f"- {cell(c.method)}: {cell(reliability_caption(c))}" for c in calibrations),
    ]


def render_validity_markdown(report: ValidityReport) -> str:
    """The validity report's tables as Markdown (the README quotes them)."""
    what = report.kind + (f", dimension {report.dimension}" if report.dimension else "")
    lines = [
        f"# Validity: {cell(report.source)} ({cell(what)})",
        "",
        f"{report.units:,} units ({report.labelled:,} with a people majority), "
        f"{report.items:,} items, {report.folds} folds, {report.bootstrap:,} bootstrap "
        f"replicates, seed {report.seed}. Best single judge: {cell(report.best_judge or 'none')}.",
    ]
    if report.policy is not None:
        lines += guarantee_markdown(report.policy)
    elif report.policy_refusal is not None:
        lines += ["", f"**No policy:** {cell(report.policy_refusal)}"]
    lines += [
        "",
        md_table(
            _method_head(report),
            [_method_cells(r, report, cell(r.name), _figure) for r in report.methods],
        ),
    ]
    if report.equal_coverage:
        lines += ["", "At equal coverage:", ""]
        rows = [_equal_cells(c, cell, _figure) for c in report.equal_coverage]
        lines.append(md_table(EQUAL_HEAD, rows))
    lines += _points_table(report)
    lines += _reliability_table(report.calibration)
    if report.split_detection:
        lines += ["", "Splits against people's disagreement:", ""]
        lines.append(md_table(SPLIT_HEAD, [_split_cells(s, cell) for s in report.split_detection]))
    a = report.agreement
    lines += [
        "",
        f"Alpha ({cell(a.level)}) among judges {_alpha(a.alpha_judges)}; "
        f"among people {_alpha(a.alpha_people)}. Independent votes: {cell(votes_text(report))}.",
        *(
            ["", f"Warning: {cell(report.judge_correlation.warning)}."]
            if report.judge_correlation and report.judge_correlation.warning
            else []
        ),
        "",
        *(f"- {cell(n)}" for n in report.notes),
    ]
    return "\n".join(lines) + "\n"


SUMMARY_HEAD = [
    "dimension",
    "best judge",
    "Spearman: best judge",
    "Spearman: weighted panel",
    "pairwise: best judge",
    "pairwise: weighted panel",
    "gated panel: coverage",
    "gated panel: accuracy",
    "best judge, same coverage",
    "gated − judge",
    "panel at 80 %",
    "panel at best judge's coverage",
    "panel − judge there",
]
"""One row per report: the figures that answer "does the panel beat its best judge?"."""


def _short(estimate: Estimate | None) -> str:
    """Value with its interval, two decimals: the summary has thirteen columns."""
    if estimate is None or estimate.value is None:
        return "—"
    if estimate.low is None or estimate.high is None:
        return f"{estimate.value:.2f}"
    return f"{estimate.value:.2f} [{estimate.low:.2f}, {estimate.high:.2f}]"


def _compared(report: ValidityReport, panel: str, basis: str) -> EqualCoverage | None:
    return next((c for c in report.equal_coverage if c.panel == panel and c.basis == basis), None)


def _at(c: EqualCoverage | None) -> str:
    """The panel's accuracy and the coverage it was taken at: ``0.86 [0.84, 0.88] at 94%``."""
    if c is None or c.coverage is None:
        return "—"
    return f"{_short(c.panel_accuracy)} at {c.coverage:.0%}"


def _summary_cells(report: ValidityReport, panel: str) -> list[str]:
    rows = {r.name: r for r in report.methods}
    judge = rows.get(report.best_judge or "")
    weighted = rows.get(panel)
    gated = _compared(report, panel, "gate")
    at_judge = _compared(report, panel, "judge")
    return [
        cell(report.dimension or "all"),
        cell(report.best_judge or "none"),
        _short(judge.spearman if judge else None),
        _short(weighted.spearman if weighted else None),
        _short(judge.pairwise_accuracy if judge else None),
        _short(weighted.pairwise_accuracy if weighted else None),
        "—" if gated is None or gated.coverage is None else f"{gated.coverage:.0%}",
        _short(gated.panel_accuracy if gated else None),
        _short(gated.judge_accuracy if gated else None),
        _short(gated.difference if gated else None),
        _at(_compared(report, panel, "fixed")),
        _at(at_judge),
        _short(at_judge.difference if at_judge else None),
    ]


def render_validity_summary(reports: Sequence[ValidityReport], panel: str = "labels") -> str:
    """One Markdown table over several reports (one per dimension), for ``panel``.

    ``panel`` is the weighting shown (default: label-trained weights, the calibrated
    weighted panel); the per-report tables give every weighting. With a target agreement,
    a last column gives each dimension's policy, or says it was refused.
    """
    rows = [_summary_cells(r, panel) for r in reports]
    head = SUMMARY_HEAD
    if any(r.policy is not None or r.policy_refusal is not None for r in reports):
        head = [*SUMMARY_HEAD, "policy: coverage (agreement)"]
        rows = [[*row, _policy_cell(r)] for row, r in zip(rows, reports, strict=True)]
    return md_table(head, rows) + "\n"


def _policy_cell(report: ValidityReport) -> str:
    policy = report.policy
    if policy is None:
        return "refused" if report.policy_refusal is not None else "—"
    agreement = "—" if policy.agreement is None else f"{policy.agreement:.2f}"
    return f"{policy.coverage:.0%} ({agreement})"


def _refusal(report: ValidityReport) -> str:
    """Where a target was asked and refused, the page says so instead of the guarantee."""
    if report.policy_refusal is None:
        return ""
    return (
        '<section id="guarantee" class="verdict"><p class="kicker">No policy</p>'
        f'<p class="topic">{esc(report.policy_refusal)}</p></section>'
    )
