"""Exception hierarchy.

Two roots, because callers treat them differently: a :class:`ConfigurationError` is the
user's mistake and is never retried (the CLI turns it into exit code 2 with a one-line
message), while :class:`ModelOutputError` and :class:`ProviderError` happen at run time and
may be retried (exit code 1 when they finally escape).
"""

from __future__ import annotations


class DebateError(Exception):
    """Base class of every error this package raises on purpose."""


class ConfigurationError(DebateError):
    """Bad input from the user: a flag, a config file, a transcript, an API argument.

    The message names the offending field and says how to fix it.
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field
        """The flag or config field at fault (``--arguments``, ``judges.0.role``), when one
        is; the CLI's ``--json`` error names it for a program to point at."""


class ProviderError(DebateError):
    """The model provider failed (HTTP error, timeout, connection refused)."""

    def __init__(
        self, message: str, *, kind: str = "provider_error", retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.kind = kind
        """``timeout``, ``rate_limited`` or ``provider_error``."""
        self.retry_after = retry_after
        """Seconds the server asked us to wait (``Retry-After``), if it said."""


class ModelOutputError(DebateError):
    """The model answered, but not with what was asked for (bad JSON, wrong schema, refusal).

    The raw text is kept so that nothing the model said is lost. When the re-asks run out,
    the error also says how many attempts were made and what all of them cost together.
    """

    def __init__(
        self,
        message: str,
        *,
        raw: str,
        reason: str = "parse_failure",
        usage: tuple[int, int, int] | None = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(message)
        self.raw = raw
        """The model's last reply, exactly as received."""
        self.reason = reason
        """``parse_failure`` (also a reply cut off by the token budget), ``schema_violation``
        or ``refused``."""
        self.usage = usage
        """Prompt, completion and cached tokens of every attempt together, if known."""
        self.attempts = attempts
        """Attempts made (first call, re-asks and provider retries) before giving up."""


class DeadlineExceeded(DebateError):
    """The run passed its deadline before the debaters finished (completed calls are cached)."""


class BudgetExceeded(DebateError):
    """A call was not made: its worst case could take the run past its budget.

    The budget is ``--max-cost`` and ``--max-tokens`` (a :class:`debate.Budget`).
    Not a provider fault (it is never retried) and not bad input (the budget was valid, it
    ran out). A judge or reviewer whose call was not made is unscored with reason
    ``budget``; a debater whose call was not made stops the debate, as a deadline does,
    with its completed calls kept in the response cache.
    """

    attempts: int = 0
    """Requests of the call that were sent before the one refused (0: none was sent)."""


class DebaterError(DebateError):
    """A debater could not produce its move after its retries; the debate cannot go on."""


ERROR_KINDS: tuple[tuple[type[BaseException], str], ...] = (
    (ConfigurationError, "configuration"),
    (ProviderError, "provider"),
    (DebaterError, "debater"),
    (ModelOutputError, "model_output"),
    (DeadlineExceeded, "deadline"),
    (DebateError, "runtime"),
    (OSError, "io"),
)
"""The ``kind`` of an error, by exception class (first match; anything else is ``runtime``).

Kept beside the classes, so a new one is given its kind where it is written; the machine
view of errors (:mod:`debate.records._errors`) reads it from here.
"""
