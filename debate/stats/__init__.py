"""Statistics: agreement, calibration, aggregation. Pure numpy/scipy, no I/O, no model.

Every statistic the panel and the council report is computed here, and only here.
"""

from debate.stats._aggregation import (
    RUBRIC_SCALE,
    RUBRIC_WEIGHTS,
    BordaEntry,
    NormalizedEntry,
    Ranking,
    SideVote,
    argument_variance,
    bootstrap_margin,
    borda,
    check_weights,
    intervals_tie,
    normalized_scores,
    rubric_overall,
    side_vote,
)
from debate.stats._agreement import (
    BootstrapResult,
    bootstrap_alpha,
    fleiss_kappa,
    fleiss_kappa_from_labels,
    fleiss_kappa_se,
    krippendorff_alpha,
    label_counts,
)
from debate.stats._calibration import calibrate, choose_calibration, minmax, zscore
from debate.stats._reading import (
    ALPHA_BANDS,
    BAND_BOUNDS,
    BAND_TEXT,
    HIGH_AGREEMENT,
    UNDEFINED,
    band,
    fmt,
    fmt_interval,
)

__all__ = [
    "ALPHA_BANDS",
    "BAND_BOUNDS",
    "BAND_TEXT",
    "HIGH_AGREEMENT",
    "UNDEFINED",
    "band",
    "fmt",
    "fmt_interval",
    "RUBRIC_SCALE",
    "RUBRIC_WEIGHTS",
    "BootstrapResult",
    "BordaEntry",
    "NormalizedEntry",
    "Ranking",
    "SideVote",
    "argument_variance",
    "borda",
    "bootstrap_alpha",
    "bootstrap_margin",
    "calibrate",
    "check_weights",
    "choose_calibration",
    "fleiss_kappa",
    "fleiss_kappa_from_labels",
    "fleiss_kappa_se",
    "intervals_tie",
    "krippendorff_alpha",
    "label_counts",
    "minmax",
    "normalized_scores",
    "rubric_overall",
    "side_vote",
    "zscore",
]
