"""Records: the typed objects that cross a boundary (transcript, evaluations, config, results).

Everything here is a frozen pydantic model or a pure helper on one; nothing here calls a
model, reads a file or computes a statistic, so every other stage can import it.
"""
