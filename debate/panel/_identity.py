"""Who a judge is, for its track record: role x model x version of its role template.

A judge whose role prompt was edited or overridden is a new judge: the template version is
a digest of the role template as the run's renderer loads it.
"""

from __future__ import annotations

from functools import lru_cache

from debate.runtime import PromptRenderer


def identity(role: str, model: str, renderer: PromptRenderer | None = None) -> str:
    """The key of a judge's track record (``renderer``: the run's templates; default shipped)."""
    version = (renderer or _shipped()).digest(f"judge_role_{role}.md.jinja")
    return f"{role}|{model}|{version}"


@lru_cache(maxsize=1)
def _shipped() -> PromptRenderer:
    return PromptRenderer()
