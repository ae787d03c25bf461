"""How a report reads an agreement coefficient: its bands, named, and their colours.

Alpha is read on Krippendorff's bands and kappa on Landis and Koch's; a gauge draws either
from the same :class:`Bands`, so a new coefficient needs a table here, not a new gauge.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from debate.stats import ALPHA_BANDS, KAPPA_BANDS, band, kappa_band


@dataclass(frozen=True)
class Bands:
    """How a coefficient is read: its bands, their colours, and the function naming them."""

    table: tuple[tuple[str, float, float], ...]
    fill: dict[str, str]
    name_of: Callable[[float | None], str]


ALPHA = Bands(
    ALPHA_BANDS,
    {"unacceptable": "#f6c9c4", "low": "#fbe0b5", "moderate": "#fff1a8", "high": "#cde8c5"},
    band,
)
"""Krippendorff's bands for alpha."""

KAPPA = Bands(
    KAPPA_BANDS,
    {
        "poor": "#f6c9c4",
        "slight": "#f9d6c8",
        "fair": "#fbe0b5",
        "moderate": "#fff1a8",
        "substantial": "#dcefc9",
        "almost perfect": "#cde8c5",
    },
    kappa_band,
)
"""Landis and Koch's bands for kappa."""
