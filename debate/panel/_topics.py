"""Topic type detection and the domain weight of each judge role.

Keywords and weights are data (``debate/data/topics.toml``, replaceable by the user).
Keywords match on word boundaries, case-insensitively, with an optional plural ending, so
``risk`` counts in "the risks" but not in "a brisk walk".
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from debate.exceptions import ConfigurationError
from debate.records import data_toml, read_toml

DEFAULT_TYPE = "default"


@dataclass(frozen=True)
class TopicProfile:
    """One topic type: its keywords and the domain weight of each role."""

    name: str
    keywords: tuple[str, ...]
    weights: dict[str, float]
    pattern: re.Pattern[str] | None


def _compile(keywords: tuple[str, ...]) -> re.Pattern[str] | None:
    if not keywords:
        return None
    alternatives = "|".join(re.escape(k).replace(r"\ ", r"\s+") for k in keywords)
    return re.compile(rf"\b(?:{alternatives})(?:s|es)?\b", re.IGNORECASE)


class TopicProfiles:
    """The topic table: detect a topic's type, look up a role's domain weight."""

    def __init__(self, table: dict[str, Any], source: str = "topics") -> None:
        profiles: dict[str, TopicProfile] = {}
        for name, entry in table.items():
            if not isinstance(entry, dict) or not isinstance(entry.get("weights"), dict):
                raise ConfigurationError(
                    f"{source}: [{name}] needs a [{name}.weights] table of role = weight"
                )
            keywords = entry.get("keywords", [])
            if not isinstance(keywords, list) or not all(isinstance(k, str) for k in keywords):
                raise ConfigurationError(f"{source}: {name}.keywords must be a list of strings")
            weights = entry["weights"]
            for role, weight in weights.items():
                number = isinstance(weight, int | float) and not isinstance(weight, bool)
                if not number or not math.isfinite(weight) or weight < 0:
                    raise ConfigurationError(
                        f"{source}: {name}.weights.{role} is {weight!r}; give a finite "
                        "non-negative number (a role's domain weight, e.g. 0.25)"
                    )
            kws = tuple(keywords)
            profiles[name] = TopicProfile(
                name, kws, {r: float(w) for r, w in weights.items()}, _compile(kws)
            )
        if DEFAULT_TYPE not in profiles:
            raise ConfigurationError(f"{source}: a [default.weights] table is required")
        self.profiles = profiles

    @classmethod
    def load(cls, path: str | Path | None = None) -> TopicProfiles:
        """The shipped table, or the one at ``path``."""
        if path is None:
            return _shipped()
        return cls(read_toml(path, "topic profile file"), str(path))

    def detect(self, topic: str) -> str:
        """The type with the most keyword hits; ties go to the earlier type; none -> default."""
        best, best_hits = DEFAULT_TYPE, 0
        for profile in self.profiles.values():
            if profile.pattern is None:
                continue
            hits = len(profile.pattern.findall(topic))
            if hits > best_hits:
                best, best_hits = profile.name, hits
        return best

    def domain_weight(self, topic_type: str, role: str, panel_size: int) -> float:
        """A role's domain weight for a topic type.

        A role missing from the type's table takes its weight from ``default``; a role
        missing there too (a custom role) gets an equal share, ``1 / panel_size``.
        """
        if topic_type not in self.profiles:
            raise ConfigurationError(
                f"topic_type {topic_type!r} is not in the topic table; choose from "
                f"{', '.join(self.profiles)}"
            )
        for name in (topic_type, DEFAULT_TYPE):
            weights = self.profiles[name].weights
            if role in weights:
                return weights[role]
        return 1.0 / panel_size


@lru_cache(maxsize=1)
def _shipped() -> TopicProfiles:
    """The shipped table, read and compiled once: every run's panel loads it."""
    return TopicProfiles(data_toml("topics.toml"), "debate/data/topics.toml")
