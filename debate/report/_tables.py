"""The table sections of the HTML report: standings, usage, transcript, run details."""

from __future__ import annotations

from debate.records import DIMENSIONS, STANDINGS, DebateResult, JudgeEvaluation, Transcript
from debate.report._markup import esc, key_values, section, table
from debate.report._view import standing_cells, unscored_label

STANDING_WORDS = {
    "UPHELD": "upheld",
    "PARTIALLY_UPHELD": "partly upheld",
    "REFUTED": "refuted",
    "UNCERTAIN": "uncertain",
}
"""Standings as short words, so that a row of six arguments fits a 1280 px page."""


def _standing(text: str) -> str:
    """A standing badge: ``partly upheld``, or ``upheld → refuted`` when the swap moved it."""
    first = text.split(" ", 1)[0]
    kind = first if first in STANDINGS else "other"
    words = " ".join(STANDING_WORDS.get(w, w) for w in text.split(" "))
    return f'<span class="st st-{kind}" title="{esc(text)}">{esc(words)}</span>'


def _judge_row(result: DebateResult, evaluation: JudgeEvaluation, ids: list[str]) -> str:
    weight = result.vote.judge_weights.get(evaluation.judge)
    meta = (
        evaluation.model
        if evaluation.role == evaluation.judge
        else f"{evaluation.role} · {evaluation.model}"
    )
    head = (
        f'<tr data-judge="{esc(evaluation.judge)}" data-status="{esc(evaluation.status)}">'
        f'<th>{esc(evaluation.judge)}<span class="judge-meta">{esc(meta)}</span></th>'
        f'<td class="num">{"—" if weight is None else f"{weight:.3f}"}</td>'
    )
    if evaluation.status != "scored":
        return (
            head + f'<td colspan="{len(ids)}" class="missing">{esc(unscored_label(evaluation))}'
            f" after {evaluation.attempts} attempt(s)</td></tr>"
        )
    cells = "".join(f"<td>{_standing(c)}</td>" for c in standing_cells(evaluation, ids))
    return head + cells + "</tr>"


def _judge_notes(result: DebateResult) -> str:
    items = []
    for e in result.evaluations:
        if e.swap is not None and e.swap.position_sensitive:
            moved = ", ".join(e.swap.position_sensitive)
            items.append(
                f"<li><strong>{esc(e.judge)}</strong>: standings of {esc(moved)} changed when "
                "the sides were swapped (shown as before → after)</li>"
            )
    raw = "".join(
        f"<details><summary>raw reply of {esc(e.judge)} (unscored)</summary>"
        f'<pre class="raw">{esc(e.raw)}</pre></details>'
        for e in result.evaluations
        if e.status != "scored" and e.raw
    )
    # The key findings are quoted in the verdict's "Why"; here only what the swap moved.
    notes = f"<h3>Moved by the swap</h3><ul>{''.join(items)}</ul>" if items else ""
    return notes + raw


def standings_section(result: DebateResult) -> str:
    """Judge x argument standings, unscored judges with their reasons."""
    ids = result.transcript.argument_ids
    head = "".join(f"<th>{esc(i)}</th>" for i in ids)
    rows = "".join(_judge_row(result, e, ids) for e in result.evaluations)
    body = (
        '<div class="scroll"><table class="standings"><thead><tr>'
        f'<th>judge (role · model)</th><th class="num">weight</th>{head}</tr></thead>'
        f"<tbody>{rows}</tbody></table></div>" + _judge_notes(result)
    )
    return section(
        "standings",
        "Each judge's standings",
        body,
        "Whether each judge found each argument upheld, partially upheld, refuted or "
        "uncertain. Unscored judges are listed with the reason; nothing is filled in for them.",
    )


def usage_section(result: DebateResult) -> str:
    """Calls, tokens, retries and cost."""
    usage = result.usage
    totals = key_values(
        [
            ("calls (retries included)", str(usage.calls)),
            ("retries", str(usage.retries)),
            ("prompt tokens", f"{usage.prompt_tokens:,}"),
            ("completion tokens", f"{usage.completion_tokens:,}"),
            ("cached prompt tokens", f"{usage.cached_tokens:,}"),
            ("cost", "not priced" if usage.cost_usd is None else f"${usage.cost_usd:.4f}"),
        ]
    )
    by_model = table(
        ["model", "calls", "prompt tokens", "completion tokens", "cached tokens"],
        [
            [
                esc(m),
                str(t.calls),
                f"{t.prompt_tokens:,}",
                f"{t.completion_tokens:,}",
                f"{t.cached_tokens:,}",
            ]
            for m, t in usage.by_model.items()
        ],
        {1, 2, 3, 4},
    )
    per_call = table(
        ["phase", "actor", "round", "model", "attempts", "ok", "prompt", "completion"],
        [
            [
                esc(c.phase),
                esc(c.actor),
                "" if c.round is None else str(c.round),
                esc(c.model),
                str(c.attempts),
                "yes" if c.ok else "no",
                str(c.prompt_tokens),
                str(c.completion_tokens),
            ]
            for c in usage.per_call
        ],
        {2, 4, 6, 7},
    )
    calls = (
        f"<details><summary>every call ({len(usage.per_call)})</summary>{per_call}</details>"
        if usage.per_call
        else ""
    )
    return section("usage", "Usage", totals + (by_model if usage.by_model else "") + calls)


def _arguments(transcript: Transcript) -> str:
    return "".join(
        f'<div class="arg {a.side}" data-arg="{esc(a.id)}"><p><span class="id">{esc(a.id)}</span>'
        f" {esc(a.claim)}</p>"
        f'<p><span class="label">reasoning</span><br>{esc(a.reasoning)}</p>'
        f'<p><span class="label">evidence</span><br>{esc(a.evidence)}</p></div>'
        for a in transcript.arguments
    )


def _cross(transcript: Transcript) -> str:
    parts = []
    for x in transcript.cross_examinations:
        concession = (
            f'<p><span class="label">concedes</span><br>{esc(x.concession)}</p>'
            if x.concession
            else ""
        )
        parts.append(
            f'<div class="arg {x.by}"><p><span class="id">Round {x.round}: {x.by} examines '
            f"{esc(x.target)}</span></p>"
            f'<p><span class="label">challenge</span><br>{esc(x.challenge)}</p>{concession}'
            f'<p><span class="label">rebuttal</span><br>{esc(x.rebuttal)}</p></div>'
        )
    return "".join(parts)


def transcript_section(result: DebateResult) -> str:
    """The whole debate, collapsed by default."""
    t = result.transcript
    closings = "".join(
        f'<div class="arg {c.side}"><p><span class="id">{c.side} closing</span></p>'
        f"<p>{esc(c.statement)}</p></div>"
        for c in t.closings
    )
    summary = (
        f"{len(t.arguments)} arguments, {len(t.cross_examinations)} cross-examinations, "
        f"{len(t.closings)} closings"
    )
    body = (
        f"<h3>Arguments</h3>{_arguments(t)}"
        + (f"<h3>Cross-examination</h3>{_cross(t)}" if t.cross_examinations else "")
        + (f"<h3>Closings</h3>{closings}" if t.closings else "")
    )
    return (
        '<section id="transcript"><details><summary><h2>Transcript</h2> '
        f'<span class="lead">({esc(summary)}; click to open)</span></summary>'
        f"{body}</details></section>"
    )


def run_section(result: DebateResult) -> str:
    """Seed, version, thresholds and panel: what is needed to reproduce the run."""
    cfg, th = result.config, result.decision.thresholds
    facts = [
        ("seed", "none" if result.seed is None else str(result.seed)),
        ("version", result.version),
        (
            "debaters",
            ", ".join(f"{k}: {v}" for k, v in result.debaters.items())
            or "none (a transcript judged as given)",
        ),
        ("arguments per side / rounds", f"{cfg.arguments} / {cfg.rounds}"),
        ("calibration", f"{result.vote.calibration} (configured: {cfg.calibration})"),
        (
            "thresholds",
            f"alpha {th.alpha:g}, kappa {th.kappa:g}, variance {th.variance:g}, gap {th.gap:g}",
        ),
        ("presentation / swap check", f"{cfg.presentation} / {'on' if cfg.swap else 'off'}"),
        *([("readings per judge", str(cfg.samples))] if cfg.samples > 1 else []),
    ]
    judges = table(
        ["judge", "role", "model", *DIMENSIONS],
        [
            [esc(j.name), esc(j.role), esc(j.model or cfg.model)]
            + [f"{j.weights.get(d, 0.0):.2f}" for d in DIMENSIONS]
            for j in cfg.judges
        ],
        set(range(3, 3 + len(DIMENSIONS))),
    )
    return section(
        "run",
        "Run details",
        key_values(facts) + "<h3>Panel and rubric weights</h3>" + judges,
    )
