"""The package version, in its one home.

pyproject.toml reads it from here (hatch's dynamic version); results and the OpenAI
client's User-Agent import it.
"""

__version__ = "0.1.0"
