"""Turning token counts into money, from a price table.

The table is TOML, USD per million tokens per model::

    taken = "2026-06-21"          # when the prices were read (optional)
    source = "https://..."        # where they were read (optional)

    [models."gpt-4o-mini"]
    prompt = 0.15
    completion = 0.60
    cached = 0.075

Cached prompt tokens are charged at ``cached`` (default: the prompt price) instead of the
prompt price. A model missing from the table makes the cost unknown (None), not zero: a
local or scripted model costs 0 only where a table says so. Without a table of the user's,
the shipped one (``debate/data/prices.toml``, with the date it was taken) is used.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field, ValidationError

from debate.exceptions import ConfigurationError
from debate.records import Finite, data_toml, read_toml, validation_message

if TYPE_CHECKING:
    from debate.records import TokenCounts


class Price(Finite):
    """USD per million tokens; finite and never negative (``inf`` is refused by name)."""

    prompt: float = Field(ge=0)
    completion: float = Field(ge=0)
    cached: float | None = Field(default=None, ge=0)

    @property
    def cached_rate(self) -> float:
        """USD per million cached prompt tokens (the prompt price when none is given)."""
        return self.prompt if self.cached is None else self.cached

    def cost(self, prompt: int, completion: int, cached: int = 0) -> float:
        """USD of these tokens (``cached`` is the part of ``prompt`` served from a cache)."""
        fresh = prompt - cached
        return (
            fresh * self.prompt + cached * self.cached_rate + completion * self.completion
        ) / 1e6

    def worst(self, prompt: int, completion: int) -> float:
        """The most these tokens can cost, whichever of them a provider serves from cache."""
        return (prompt * max(self.prompt, self.cached_rate) + completion * self.completion) / 1e6


class PriceTable(Finite):
    """Prices by model name, with when and where they were taken."""

    models: dict[str, Price]
    taken: str | None = None
    """When the prices were read from their source (a date)."""
    source: str | None = None
    """Where they were read: a URL or a note."""

    @classmethod
    def load(cls, path: str | Path) -> PriceTable:
        """Read a price table TOML; a bad one is a one-line error naming the field."""
        data = read_toml(path, "price table")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            message = validation_message(exc, f"price table {path}")
            raise ConfigurationError(f"{message}; give USD per million tokens, 0 or more") from exc

    @classmethod
    def default(cls) -> PriceTable:
        """The shipped table (``debate/data/prices.toml``), read once."""
        return _shipped()

    def where(self) -> str:
        """How to name this table in a message: its source and date, when it says them."""
        taken = f", taken {self.taken}" if self.taken else ""
        return f"{self.source or 'the price table'}{taken}"

    def unpriced(self, names: Iterable[str]) -> list[str]:
        """The names (sorted, once each) that have no price here."""
        return sorted({n for n in names if n not in self.models})

    def cost(self, by_model: Mapping[str, TokenCounts]) -> float | None:
        """Total cost in USD, or None when a model used is not priced."""
        total = 0.0
        for name, counts in by_model.items():
            price = self.models.get(name)
            if price is None:
                return None
            tokens = (counts.prompt_tokens, counts.completion_tokens, counts.cached_tokens)
            total += price.cost(*tokens)
        return round(total, 6)


@cache
def _shipped() -> PriceTable:
    return PriceTable.model_validate(data_toml("prices.toml"))
