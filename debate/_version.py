"""The package version, in its one home.

pyproject.toml reads it from here (hatch's dynamic version); results, the OpenAI client's
User-Agent and ``debate --version`` import it.
"""

__version__ = "0.1.0"

VERSION_LINE = f"debate {__version__}"
"""What ``debate --version`` prints: argparse's action and the process entry's shortcut."""
