"""The debate itself: PRO and CON debaters write openings, cross-examine and close."""

from __future__ import annotations

from debate.protocol._debate import DebateProtocol, Debaters

__all__ = [
    "DebateProtocol",
    "Debaters",
]
