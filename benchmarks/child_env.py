"""The environment of the processes a benchmark starts: that of a user's installed package.

An installed package has its bytecode cached (pip compiles it at install). Some shells and
CI images set ``PYTHONDONTWRITEBYTECODE``; a command started under it compiles the whole
package again at every start (about 2 s on the 2-core test machine), a cost no user pays.
"""

from __future__ import annotations

import os


def child_env(**extra: str) -> dict[str, str]:
    """``os.environ`` with bytecode caching on, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, **extra}
