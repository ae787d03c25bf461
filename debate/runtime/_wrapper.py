"""A model that wraps another one (the rate limiter) and forwards what is not its concern."""

from __future__ import annotations

from debate.models._base import Model


class ModelWrapper:
    """Forwards ``name``, ``base_url`` and ``aclose`` to the wrapped model.

    Subclasses implement ``complete``; stacking wrappers keeps the inner model's identity,
    so results, track records and cache keys name the real model.
    """

    def __init__(self, inner: Model) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        """The wrapped model's name."""
        return self.inner.name

    @property
    def base_url(self) -> str | None:
        """The wrapped model's endpoint, if it has one."""
        return getattr(self.inner, "base_url", None)

    async def aclose(self) -> None:
        """Close the wrapped model's client, if it has one."""
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()
