"""The panel: judges score a transcript, and the decision rule turns scores into a verdict.

Judges read in counterbalanced orders; their scores become matrices; calibration, the
weighted vote and agreement decide a winner, or report an honest split with its reasons.
"""
