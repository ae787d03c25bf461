"""The seed, in its one home: its range, the check of a given one, drawing and deriving.

Every seed a run uses comes from here: the one a user types (``--seed``, ``DEBATE_SEED``,
``config.seed``, an API argument), the one drawn when none was given (recorded in every
result so the run replays), and the ones derived from it for a judge's further readings or a
stability run's re-judgings. One range and one derivation mean a recorded seed always
replays and no two derived seeds collide by construction of their labels.
"""

from __future__ import annotations

import hashlib
import secrets

from debate.exceptions import ConfigurationError

SEED_MAX = 2**32 - 1
"""Seeds a user gives run from 0 to 2**32 - 1: the range every backend takes (llama.cpp's
seed is a 32-bit unsigned integer; numpy and the OpenAI API accept it)."""

DRAWN_BELOW = 2**31
"""Seeds this package draws or derives lie in ``[0, 2**31)``: inside every backend's range,
signed 32-bit ones included."""


def check_seed(value: int, name: str = "--seed") -> int:
    """The one check of a seed a user gave (a flag, ``DEBATE_SEED``, an argument)."""
    if not 0 <= value <= SEED_MAX:
        raise ConfigurationError(
            f"{name}: {value} is out of range; use a whole number from 0 to {SEED_MAX}"
        )
    return value


def draw_seed(seed: int | None = None) -> int:
    """The given seed (checked), or a fresh one when none was given.

    The one place a seed is drawn, so that the API, the panel, the council, the service and
    ``run.json`` draw from the same range. A given seed is checked here too, so that
    ``run_debate(seed=-1)`` is refused with the range rather than failing inside a backend.
    """
    return secrets.randbelow(DRAWN_BELOW) if seed is None else check_seed(seed, "seed")


def derive_seed(seed: int, label: str) -> int:
    """A seed derived from ``seed`` for the purpose ``label`` (a judge's reading, a re-run).

    A hash, so it is reproducible from the run's seed and differs for every label.
    """
    digest = hashlib.sha256(f"{seed}:{label}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % DRAWN_BELOW
