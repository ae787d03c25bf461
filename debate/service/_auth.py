"""Bearer tokens for the service: who may submit jobs and whose jobs a caller may see.

The server holds only SHA-256 digests of the tokens it accepts (``token_hashes`` in the
settings, or ``DEBATE_SERVICE_TOKENS``, comma-separated), so a leaked config or database
reveals no token. A presented token is hashed and compared with each digest by
``hmac.compare_digest``, which takes the same time wherever the digests first differ.

A job's owner is the presented token's digest (the store keeps a short hash of it), never
the token: a token never reaches a response, a log line or the database.

``python -m debate.service._auth TOKEN`` prints the digest to put in the settings.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from debate.exceptions import ConfigurationError
from debate.service._models import JobError

TOKENS_ENV = "DEBATE_SERVICE_TOKENS"
"""Environment variable with more accepted token digests, comma-separated."""

_DIGEST = re.compile(r"[0-9a-f]{64}")
_BEARER = re.compile(r"Bearer ([A-Za-z0-9._~+/=-]+)", re.IGNORECASE)

LOG_PREFIX = 8
"""Hex digits of a caller's digest that a log line shows: enough to tell callers apart."""


def token_digest(token: str) -> str:
    """The SHA-256 hex digest of a token, as the settings list accepted tokens."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def accepted_digests(
    token_hashes: Iterable[str], environ: Mapping[str, str] | None = None
) -> frozenset[str]:
    """The digests of the accepted tokens: the settings' and ``DEBATE_SERVICE_TOKENS``'s.

    Raises:
        ConfigurationError: an entry is not a SHA-256 hex digest (a token pasted where its
            digest belongs would otherwise never match, and sit in the config in clear).
    """
    env = os.environ if environ is None else environ
    listed = [("token_hashes", h) for h in token_hashes]
    listed += [(TOKENS_ENV, h) for h in env.get(TOKENS_ENV, "").split(",") if h.strip()]
    digests = set()
    for source, value in listed:
        digest = value.strip().lower()
        if not _DIGEST.fullmatch(digest):
            raise ConfigurationError(
                f"{source}: an entry is not a SHA-256 hex digest (64 hex digits); "
                "list digests, not tokens: debate serve --print-token-hash TOKEN",
                field=source,
            )
        digests.add(digest)
    return frozenset(digests)


class AuthError(Exception):
    """A request refused for its credentials: 401 (who are you?) or 403 (not yours)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error = JobError(kind="auth", message=message, field="Authorization")


@dataclass(frozen=True)
class Caller:
    """Who sent a request: the digest of its token, or None on a server without tokens."""

    digest: str | None

    @property
    def label(self) -> str:
        """What a log line shows of the caller: a digest prefix, or ``-``."""
        return self.digest[:LOG_PREFIX] if self.digest else "-"


class Authenticator:
    """Checks ``Authorization: Bearer`` headers against the accepted digests.

    With no digest configured every request is let through as an anonymous caller: such a
    server must listen on loopback only (``debate serve`` refuses any other host).
    """

    def __init__(self, digests: frozenset[str]) -> None:
        self.digests = digests

    @property
    def enabled(self) -> bool:
        """Whether requests need a token."""
        return bool(self.digests)

    def caller(self, authorization: str | None) -> Caller:
        """The caller a request's ``Authorization`` header names.

        Raises:
            AuthError: 401: no header, not a bearer token, or a token not accepted.
        """
        if not self.enabled:
            return Caller(None)
        if not authorization:
            raise AuthError(401, "Authorization: missing; send 'Authorization: Bearer TOKEN'")
        match = _BEARER.fullmatch(authorization.strip())
        if match is None:
            raise AuthError(
                401, "Authorization: not a bearer token; send 'Authorization: Bearer TOKEN'"
            )
        digest = token_digest(match.group(1))
        # every digest is compared, so the time taken does not tell which one nearly matched
        found = [hmac.compare_digest(digest, accepted) for accepted in self.digests]
        if not any(found):
            raise AuthError(401, "Authorization: this token is not accepted; check the token")
        return Caller(digest)


def main(argv: list[str]) -> int:
    """``python -m debate.service._auth TOKEN``: print the token's digest."""
    if len(argv) != 1:
        sys.stderr.write("usage: python -m debate.service._auth TOKEN\n")
        return 2
    sys.stdout.write(token_digest(argv[0]) + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover - exercised through debate serve --print-token-hash
    raise SystemExit(main(sys.argv[1:]))
