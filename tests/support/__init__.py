"""The suite's shared fakes and helpers: test servers, builders, sample data.

``ROOT`` is the checkout's root, so that a test finds ``examples/``, ``docs/`` or ``prompts/``
whatever folder of ``tests/`` it sits in (tests mirror the package's stages, at two depths).
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
