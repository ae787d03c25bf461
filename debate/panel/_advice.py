"""What to do with a verdict, by how far the judges agree: the agreement bands as wording.

The bands are Krippendorff's (:data:`debate.stats.ALPHA_BANDS`), and what each allows is the
reference table of the judges' agreement (``reference/judges.md``):

| alpha | reading | action |
|---|---|---|
| >= 0.80 | high | aggregate and decide |
| 0.67-0.80 | moderate | act, but flag the high-variance items (named) |
| 0.50-0.67 | low | caution: analyse the sources of divergence; don't blindly average |
| < 0.50 | unacceptable | no verdict to act on: more information or people |

A panel can name a winner below high agreement (alpha above ``Thresholds.alpha`` with a
failing kappa, say alpha 0.548 and kappa 0.156), and "agrees well enough to act" would then
overclaim; so every sentence that tells a user what to do is looked up here by band, one
table per use: the live panel's recommendation (:func:`recommendation`), a debate report's
explanation (:func:`winner_explanation`, :func:`too_close_explanation`) and the advice on a
recorded table or a validity run (:func:`band_advice`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from debate.stats import ALPHA_BANDS, UNDEFINED, band, fmt

FLAG_SHARE = 0.5
"""An argument is flagged as high-variance under moderate or low agreement when its
variance across judges reaches this share of ``Thresholds.variance`` (1.5 of 3.0 by
default: halfway to the variance at which the panel is irreconcilable on it). When none
does, the most contested argument(s) are named instead, so the flag always names what to
review."""
MAX_NAMED = 5
"""Items named in a table-wide advice before the rest are counted (``and 12 more``)."""


def _range(name: str) -> str:
    """``alpha 0.67-0.80`` for a band, from the bands' own bounds."""
    low, high = next((lo, hi) for n, lo, hi in ALPHA_BANDS if n == name)
    if low == float("-inf"):
        return f"alpha below {high:.2f}"
    if high == float("inf"):
        return f"alpha >= {low:.2f}"
    return f"alpha {low:.2f}-{high:.2f}"


WINNER_RECOMMENDATIONS: Mapping[str, str] = {
    "high": (
        "The panel agrees highly (alpha {alpha}): aggregate and act on the verdict; still read "
        "the notes on the arguments it scored lowest before deciding."
    ),
    "moderate": (
        "The panel agrees moderately (alpha {alpha}): act on the verdict, but first review the "
        "high-variance arguments: {items}."
    ),
    "low": (
        "The panel's agreement is low (alpha {alpha}): treat the verdict with caution; analyse "
        "where the judges diverge ({items}) before acting, and do not take their average as "
        "a shared view."
    ),
    "unacceptable": (
        "The judges' scores do not agree (alpha {alpha}, unacceptable): the verdict rests on "
        "their standings alone; do not act on it without reviewing {items} yourself, gathering "
        "more information or asking people."
    ),
    UNDEFINED: (
        "Agreement on the scores cannot be shown (alpha undefined): the verdict rests on the "
        "standings alone; read the reasons before acting on it."
    ),
}
"""A winning panel's recommendation by the alpha band."""

_CLOSE_AGREEING = (
    "The panel agrees, but the two sides are too close to call: treat this as a tie and "
    "decide on criteria the debate did not cover."
)
_CLOSE_DIVERGING = (
    "The two sides are too close to call, and the judges' agreement is {band} (alpha "
    "{alpha}): treat this as a tie, do not read the margin as the judges' shared view, and "
    "decide on criteria the debate did not cover."
)
TOO_CLOSE_RECOMMENDATIONS: Mapping[str, str] = {
    "high": _CLOSE_AGREEING,
    "moderate": _CLOSE_AGREEING,
    "low": _CLOSE_DIVERGING,
    "unacceptable": _CLOSE_DIVERGING,
    UNDEFINED: _CLOSE_DIVERGING,
}
"""A too-close panel's recommendation by the alpha band: only at moderate agreement or
above does it say that the panel agrees."""

OTHER_RECOMMENDATIONS: Mapping[str, str] = {
    "no_difference": (
        "The panel sees no difference between the sides: treat this as a tie and decide on "
        "criteria the debate did not cover."
    ),
    "irreconcilable": (
        "The judges do not agree, so there is no verdict: read the reasons for where they "
        "split, review those points yourself, gather the missing information, or ask people "
        "with domain knowledge."
    ),
    "insufficient": (
        "Too few judges could score the debate to decide anything: fix the failing judges "
        "(see their reasons) and judge the transcript again."
    ),
}
"""Outcomes whose recommendation claims no agreement, whatever the band."""

WINNER_EXPLANATIONS: Mapping[str, str] = {
    "high": "The judges agree with one another highly",
    "moderate": "The judges agree with one another moderately (review the contested arguments)",
    "low": "The judges agree with one another only weakly, so treat the verdict with caution",
    "unacceptable": (
        "The judges' scores do not agree with one another (their standings carry the verdict)"
    ),
    UNDEFINED: "The judges' agreement on the scores cannot be shown (their standings carry it)",
}
"""A debate report's first sentence for a winner, by the alpha band; the sentence goes on
with which side scored higher."""

_CLOSE_TOGETHER = (
    "The judges agree with one another, but they scored the two sides almost the same. "
    "Treat the debate as a tie."
)
_CLOSE_APART = (
    "The judges scored the two sides almost the same, and their agreement is {band}: treat "
    "the debate as a tie, not as a shared view that the sides are equal."
)
TOO_CLOSE_EXPLANATIONS: Mapping[str, str] = {
    "high": _CLOSE_TOGETHER,
    "moderate": _CLOSE_TOGETHER,
    "low": _CLOSE_APART,
    "unacceptable": _CLOSE_APART,
    UNDEFINED: _CLOSE_APART,
}
"""A debate report's sentence for a too-close panel, by the alpha band."""
NO_DIFFERENCE_EXPLANATION = (
    "The judges saw no difference between the two sides: every argument got the same score. "
    "Treat the debate as a tie."
)

BAND_ADVICE: Mapping[str, str] = {
    "high": "high agreement ({range}): aggregate and decide",
    "moderate": (
        "moderate agreement ({range}): act on the decisions, but first review the "
        "high-variance items: {items}"
    ),
    "low": (
        "low agreement ({range}): caution; analyse the sources of divergence ({items}) before "
        "acting on the decisions, and do not average blindly"
    ),
    "unacceptable": (
        "unacceptable agreement ({range}): do not act on the panel's decisions as they stand; "
        "gather more information or ask people, starting with {items}"
    ),
    UNDEFINED: "agreement among the judges cannot be shown (alpha undefined)",
}
"""The advice on a whole table of decisions (``debate decide``, ``debate validity``)."""


def flagged_arguments(variances: Mapping[str, float | None], threshold: float) -> list[str]:
    """The arguments to review under moderate or low agreement (:data:`FLAG_SHARE`).

    In the order given; the most contested ones (all of them when several tie) when no
    argument reaches the flag.
    """
    known = {a: v for a, v in variances.items() if v is not None}
    if not known:
        return []
    flagged = [a for a, v in known.items() if v >= FLAG_SHARE * threshold]
    if flagged:
        return flagged
    top = max(known.values())
    return [a for a, v in known.items() if abs(v - top) < 1e-9]


def recommendation(
    outcome: str, alpha: float | None, arguments: Sequence[str], *, no_difference: bool = False
) -> str:
    """What to do with a live panel's (or a debate's) decision, by outcome and alpha band.

    ``arguments`` are the ones to name (:func:`flagged_arguments`); ``no_difference`` is the
    too-close case in which no judge told any argument from another.
    """
    if no_difference:
        return OTHER_RECOMMENDATIONS["no_difference"]
    if outcome in OTHER_RECOMMENDATIONS:
        return OTHER_RECOMMENDATIONS[outcome]
    table = WINNER_RECOMMENDATIONS if outcome == "winner" else TOO_CLOSE_RECOMMENDATIONS
    name = band(alpha)
    items = ", ".join(arguments) or "the arguments the judges scored furthest apart"
    return table[name].format(alpha=fmt(alpha), band=name, items=items)


def winner_explanation(alpha: float | None) -> str:
    """The start of a debate report's sentence on a winner, by the alpha band."""
    return WINNER_EXPLANATIONS[band(alpha)]


def too_close_explanation(alpha: float | None, *, no_difference: bool = False) -> str:
    """A debate report's sentence on a too-close panel, by the alpha band.

    With ``no_difference`` (every judge gave every argument the same score) alpha is
    undefined because there was nothing to disagree on, and the judges did agree.
    """
    if no_difference:
        return NO_DIFFERENCE_EXPLANATION
    name = band(alpha)
    return TOO_CLOSE_EXPLANATIONS[name].format(band=name)


def band_advice(alpha: float | None, items: Sequence[str], what: str = "the judges") -> str:
    """One line: the agreement among ``what`` on a whole table, its band and what it allows.

    ``items`` are the ones to name (the items the panel found split); the first
    :data:`MAX_NAMED` are named, the rest counted.
    """
    name = band(alpha)
    shown = ", ".join(items[:MAX_NAMED]) or "the items on which the judges differ most"
    if len(items) > MAX_NAMED:
        shown += f" and {len(items) - MAX_NAMED} more"
    text = BAND_ADVICE[name].format(range=_range(name) if name != UNDEFINED else "", items=shown)
    return f"agreement among {what}: alpha {fmt(alpha)}, {text}"
