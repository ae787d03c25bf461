"""What a command may spend and how fast it may call: prices, budget, rate limits.

With ``batch`` (and ``calibrate``) the caps and limits are over all items together.
"""

from __future__ import annotations

import argparse
from typing import Any

from debate._cli.files import user_file
from debate._cli.values import at_least, usd
from debate.runtime import MAX_BUDGET_TOKENS, Budget, PriceTable, RateLimiter


def cost_flags(parser: argparse.ArgumentParser) -> None:
    """``--prices``, ``--max-cost``, ``--max-tokens``, ``--rpm`` and ``--tpm``.

    Every command that calls models has them; with ``batch`` (and ``calibrate``) the caps and
    limits are over all items together.
    """
    group = parser.add_argument_group("cost and limits")
    group.add_argument(
        "--prices",
        metavar="FILE",
        help="price table TOML, USD per 1M tokens (default: the shipped table of well-known "
        "models; a model missing from the table is reported as not priced)",
    )
    group.add_argument(
        "--max-cost",
        type=usd,
        metavar="USD",
        help="no call starts once its worst case could take the spend of the run (batch, "
        "calibration: all items) past this many US dollars",
    )
    group.add_argument(
        "--max-tokens",
        type=at_least(1, MAX_BUDGET_TOKENS),
        metavar="N",
        help="the same for prompt + completion tokens (not the per-call max_tokens)",
    )
    group.add_argument(
        "--rpm", type=int, metavar="R", help="requests per minute, all calls (default: no limit)"
    )
    group.add_argument(
        "--tpm", type=int, metavar="T", help="tokens per minute, all calls (default: no limit)"
    )


def prices(args: argparse.Namespace) -> PriceTable | None:
    """``--prices``; a bad file is bad input before any work.

    None without the flag: the run then prices with the shipped table, joined with its
    endpoints' own tables (which win over the shipped one, not over a table given here).
    """
    if not args.prices:
        return None
    with user_file(args.prices, "price table"):
        return PriceTable.load(args.prices)


def budget(args: argparse.Namespace) -> Budget | None:
    """``--max-cost`` and ``--max-tokens`` as one budget for the command; None without them."""
    if args.max_cost is None and args.max_tokens is None:
        return None
    return Budget(max_cost_usd=args.max_cost, max_tokens=args.max_tokens)


def limiter(args: argparse.Namespace) -> RateLimiter | None:
    """``--rpm``/``--tpm`` as one limiter shared by every call of the command.

    ``--rpm 0`` is refused by the limiter: leaving the flag out is how to ask for no limit.
    """
    if args.rpm is None and args.tpm is None:
        return None
    return RateLimiter(args.rpm, args.tpm)


def cost_and_limits(args: argparse.Namespace) -> dict[str, Any]:
    """``prices``, ``budget`` and ``limiter`` from the flags, read before any work."""
    return {
        "prices": prices(args),
        "budget": budget(args),
        "limiter": limiter(args),
    }
