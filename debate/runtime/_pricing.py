"""Turning token counts into money, from a price table the user supplies.

The table is TOML, USD per million tokens per model::

    [models."gpt-4o-mini"]
    prompt = 0.15
    completion = 0.60
    cached = 0.075

Cached prompt tokens are charged at ``cached`` (default: the prompt price) instead of the
prompt price. A model missing from the table makes the cost unknown (None), not zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field, ValidationError

from debate.exceptions import ConfigurationError
from debate.records._config import read_toml, validation_message
from debate.records._transcript import Frozen

if TYPE_CHECKING:
    from debate.records._result import TokenCounts


class Price(Frozen):
    """USD per million tokens."""

    prompt: float = Field(ge=0)
    completion: float = Field(ge=0)
    cached: float | None = Field(default=None, ge=0)


class PriceTable(Frozen):
    """Prices by model name."""

    models: dict[str, Price]

    @classmethod
    def load(cls, path: str | Path) -> PriceTable:
        """Read a price table TOML."""
        data = read_toml(path, "price table")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigurationError(validation_message(exc, f"price table {path}")) from exc

    def cost(self, by_model: Mapping[str, TokenCounts]) -> float | None:
        """Total cost in USD, or None when a model used is not priced."""
        total = 0.0
        for name, counts in by_model.items():
            price = self.models.get(name)
            if price is None:
                return None
            cached_price = price.prompt if price.cached is None else price.cached
            fresh = counts.prompt_tokens - counts.cached_tokens
            total += (
                fresh * price.prompt
                + counts.cached_tokens * cached_price
                + counts.completion_tokens * price.completion
            ) / 1e6
        return round(total, 6)
