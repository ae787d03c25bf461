"""The tidy per-unit table of a cross-fitted frame: rows, a CSV file, a DataFrame.

One row per decision unit and method or judge, so a reader can recompute any figure of the
validity report with their own tools.
"""

from __future__ import annotations

import csv
import importlib
import math
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from debate.exceptions import ConfigurationError
from debate.records import NO_CALL, OUTCOMES, VERDICTS, Calls, DecisionFrame

PANDAS_MISSING = 'frame_dataframe needs pandas: pip install -e ".[pandas]"'
CSV_COLUMNS = (
    "item",
    "option_a",
    "option_b",
    "fold",
    "label",
    "people_split",
    "method",
    "kind",
    "call",
    "declared",
    "confidence",
    "outcome",
    "correct",
)
"""The tidy per-unit, per-method columns of :func:`write_frame_csv` and
:func:`frame_dataframe`."""


def _named(frame: DecisionFrame) -> list[tuple[str, str, Calls]]:
    return [
        *((name, "panel", calls) for name, calls in frame.methods.items()),
        *((name, "judge", calls) for name, calls in frame.judges.items()),
    ]


def _verdict(code: int) -> str | None:
    return None if code == NO_CALL else VERDICTS[code]


def frame_rows(frame: DecisionFrame) -> Iterator[dict[str, Any]]:
    """The tidy rows of a frame: one per decision unit and method or judge (unit-major).

    Columns are :data:`CSV_COLUMNS`. ``label`` and ``call`` are ``A``/``B``/``tie`` or None
    (no majority among people; no call, an unscored judge); ``correct`` is None where
    either is missing; ``outcome`` is None for ungated methods; ``option_a``/``option_b``
    are None when the frame does not name them.
    """
    named = _named(frame)
    for u in range(frame.group.size):
        label = int(frame.label[u])
        a, b = frame.options[u] if frame.options else (None, None)
        shared = {
            "item": frame.items[int(frame.group[u])],
            "option_a": a,
            "option_b": b,
            "fold": int(frame.fold[u]),
            "label": _verdict(label),
            "people_split": bool(frame.people_split[u]),
        }
        for name, kind, calls in named:
            call = int(calls.call[u])
            confidence = float(calls.confidence[u])
            yield {
                **shared,
                "method": name,
                "kind": kind,
                "call": _verdict(call),
                "declared": bool(calls.declared[u]),
                "confidence": confidence if math.isfinite(confidence) else None,
                "outcome": None if calls.outcome is None else OUTCOMES[int(calls.outcome[u])],
                "correct": None if NO_CALL in (label, call) else call == label,
            }


def write_frame_csv(path: str | Path, frame: DecisionFrame) -> int:
    """Write :func:`frame_rows` as CSV (empty cell for None), atomically.

    Returns:
        The number of data rows written.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    count = 0
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
            writer.writeheader()
            for row in frame_rows(frame):
                writer.writerow(row)
                count += 1
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return count


def frame_dataframe(frame: DecisionFrame) -> Any:
    """The rows of :func:`frame_rows` as a pandas DataFrame, built column by column.

    Raises:
        ConfigurationError: pandas is not installed (it is the optional ``pandas`` extra).
    """
    try:
        pd = importlib.import_module("pandas")
    except ImportError as exc:
        raise ConfigurationError(PANDAS_MISSING) from exc
    named = _named(frame)
    m, n = len(named), frame.group.size

    def per_unit(values: NDArray[Any]) -> NDArray[Any]:
        return np.repeat(values, m)

    def per_method(parts: list[NDArray[Any]]) -> NDArray[Any]:
        return np.stack(parts, axis=1).ravel() if parts else np.empty(0)

    verdicts = np.array([*VERDICTS, None], dtype=object)  # index -1 is NO_CALL
    outcomes = np.array([*OUTCOMES, None], dtype=object)
    options = np.array(frame.options or [(None, None)] * n, dtype=object).reshape(n, 2)
    label = per_unit(frame.label.astype(np.intp))
    call = per_method([c.call.astype(np.intp) for _, _, c in named])
    missing = (label == NO_CALL) | (call == NO_CALL)
    correct = pd.array(np.where(missing, False, call == label), dtype="boolean")
    correct[missing] = pd.NA
    outcome = per_method(
        [np.full(n, -1) if c.outcome is None else c.outcome.astype(np.intp) for _, _, c in named]
    )
    columns = {
        "item": per_unit(np.array(frame.items, dtype=object)[frame.group]),
        "option_a": per_unit(options[:, 0]),
        "option_b": per_unit(options[:, 1]),
        "fold": per_unit(frame.fold),
        "label": verdicts[label],
        "people_split": per_unit(frame.people_split),
        "method": np.tile(np.array([x for x, _, _ in named], dtype=object), n),
        "kind": np.tile(np.array([k for _, k, _ in named], dtype=object), n),
        "call": verdicts[call],
        "declared": per_method([c.declared for _, _, c in named]),
        "confidence": per_method([c.confidence for _, _, c in named]),
        "outcome": outcomes[outcome],
        "correct": correct,
    }
    return pd.DataFrame(columns, columns=list(CSV_COLUMNS))
