"""A large plain CSV judgments file split by pyarrow's reader, when pyarrow is installed.

The csv module path (:mod:`debate.judgments._tables`) reads 1.6 million rows in about 3.7 s
on the 2-core test machine, most of it splitting the lines and interning names cell by cell
in Python. pyarrow (the optional ``arrow`` extra) parses the same text in C++ on every core
and dictionary-encodes each named column, which is what :class:`~debate.judgments._cells._Column`
does: the distinct raw values in first-seen order, and each row's index among them. The
builder then checks and finishes the table exactly as before, on the same raw values.

Only for text the csv module would split at its commas too: no quote and no carriage return,
every non-blank line of the header's width, every item (and unit) filled and no cell over the
csv module's size limit. Anything else, and any file under :data:`ARROW_FROM` characters
(where importing pyarrow would cost more than it saves), returns None: the csv module reads
it, with its line-by-line messages.
"""

from __future__ import annotations

import csv
import logging
from dataclasses import dataclass
from functools import cache
from types import ModuleType

import numpy as np
from numpy.typing import NDArray

logger = logging.getLogger(__name__)

ARROW_FROM = 1_000_000
"""Characters of text from which a plain file is read with pyarrow (about 40,000 rows)."""
MIN_MAJOR = 14
"""The oldest pyarrow used (the ``arrow`` extra's pin); an older one is left unused."""
FILLED = ("item", "unit")
"""Columns whose blank cells the csv path handles row by row (a blank item drops the row, a
blank unit takes the option's name): a file with one is left to it."""


@dataclass(frozen=True)
class Encoded:
    """One named column: its distinct raw values in first-seen order, and each row's index."""

    values: list[str]
    codes: NDArray[np.int32]


Columns = dict[str, "Encoded | list[object]"]
"""Named columns encoded; numeric columns (scores, probabilities) as their cells' text."""


@cache
def _pyarrow() -> tuple[ModuleType, ModuleType, ModuleType] | None:
    """The pyarrow modules used here, or None when the ``arrow`` extra is not installed."""
    try:
        import pyarrow
        import pyarrow.compute
        import pyarrow.csv
    except ImportError:
        return None
    major = pyarrow.__version__.split(".", 1)[0]
    if not major.isdigit() or int(major) < MIN_MAJOR:  # older readers lack options used here
        logger.info(
            "pyarrow %s is older than %d: CSV files are read by the csv module",
            pyarrow.__version__,
            MIN_MAJOR,
        )
        return None
    return pyarrow, pyarrow.csv, pyarrow.compute


def arrow_available() -> bool:
    """Whether large plain CSV files are read with pyarrow (the ``arrow`` extra)."""
    return _pyarrow() is not None


def arrow_columns(
    text: str, start: int, names: list[str], wanted: dict[str, bool]
) -> Columns | None:
    """The columns ``wanted`` (name -> numeric) of the rows from ``text[start:]``, or None.

    ``text`` has no quote and no carriage return (the caller checks); ``names`` is its
    header. None when the text is small, pyarrow is missing, or the rows are not plain (see
    the module's docstring): the caller reads them with the csv module.
    """
    if len(text) - start < ARROW_FROM:
        return None
    modules = _pyarrow()
    if modules is None:
        return None
    pa, pa_csv, pc = modules
    strings = dict.fromkeys(names, pa.string())
    try:
        table = pa_csv.read_csv(
            pa.py_buffer(text[start:].encode("utf-8")),
            read_options=pa_csv.ReadOptions(column_names=names),
            parse_options=pa_csv.ParseOptions(
                quote_char=False, escape_char=False, newlines_in_values=False
            ),
            convert_options=pa_csv.ConvertOptions(
                column_types=strings,
                null_values=[],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except pa.ArrowInvalid as exc:  # a row of another width: the csv path names its line
        logger.debug("pyarrow left the file to the csv module: %s", exc)
        return None
    limit = csv.field_size_limit()
    out: Columns = {}
    for name, numeric in wanted.items():
        column = table.column(name).combine_chunks()
        if len(column) and pc.max(pc.binary_length(column)).as_py() > limit:
            return None
        if numeric:
            out[name] = column.to_pylist()
            continue
        encoded = column.dictionary_encode()
        values = encoded.dictionary.to_pylist()
        if name in FILLED and not all(map(str.strip, values)):
            return None
        out[name] = Encoded(values, encoded.indices.to_numpy().astype(np.int32, copy=False))
    return out
