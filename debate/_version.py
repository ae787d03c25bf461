"""The package version (single source, also read by the result)."""

__version__ = "0.1.0"
