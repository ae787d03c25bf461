"""Council mode: the same panel ranks N candidate answers to one question.

The rules cited across the package as ADR-007, ADR-010, ADR-016 and ADR-017 (Borda and vote
coverage, normalised averaging, the rubric and its accuracy ceiling, order randomisation) are
stated in ``docs/decisions.md``.
"""
