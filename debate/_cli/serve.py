"""``debate serve``: the HTTP API (jobs, events, reports) on uvicorn.

Needs the ``server`` extra (``pip install -e ".[server]"``). Tokens are given as SHA-256
digests in ``DEBATE_SERVICE_TOKENS`` (``debate serve --print-token-hash TOKEN`` prints one);
without any, every request is let in, so the server then listens on loopback only.

SIGTERM (or Ctrl-C) drains: uvicorn stops accepting connections and gives open ones a few
seconds, then the runner stops and the jobs it was running go back to the queue, to be
taken up by the next start (completed model calls replay from the response cache).
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from debate._cli.config import (
    CONFIG_FLAGS,
    check_model_flags,
    config_flags,
    model_choice_flags,
    panel_config,
)
from debate._cli.files import sqlite_file
from debate._cli.parsing import Commands, count_flag, subcommand
from debate._cli.values import at_least, finite
from debate.exceptions import ConfigurationError
from debate.records import RunConfig, validation_message
from debate.runtime import ModelPool

HELP = "serve the HTTP API: jobs, their events and reports"
DESCRIPTION = (
    "Run the service: submit debates, judgements, councils and decisions "
    "over HTTP; jobs are kept in a SQLite database (or PostgreSQL, shared by several "
    "replicas) and survive a restart."
)

LOOPBACK = ("127.0.0.1", "::1", "localhost")
DRAIN_S = 5
"""Seconds uvicorn gives open connections (event streams, mostly) at shutdown."""


def add_parser(commands: Commands) -> None:
    """Register ``debate serve``."""
    parser = subcommand(commands, "serve", serve_command, HELP, DESCRIPTION)
    net = parser.add_argument_group("network")
    net.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    count_flag(net, "--port", 0, 65535, metavar=None, default=8765, help="port (8765)")
    net.add_argument(
        "--log-format",
        choices=["text", "json"],
        default="text",
        help="log lines for people (text) or one JSON object per line (json)",
    )
    net.add_argument(
        "--print-token-hash",
        metavar="TOKEN",
        help="print the SHA-256 digest of TOKEN (for DEBATE_SERVICE_TOKENS) and exit",
    )
    _job_flags(parser)
    model = parser.add_argument_group("model")
    config_flags(model)
    model_choice_flags(
        model,
        model="model for debaters and judges (as debate run)",
        base_url="OpenAI-compatible endpoint of --model",
        api_key_env="variable holding its key",
    )


JOB_LIMITS: tuple[tuple[str, Callable[[str], Any], float, str | None, str], ...] = (
    (
        "--lease",
        finite,
        30.0,
        "S",
        "PostgreSQL: seconds a replica's claim on a job holds without renewal; a killed "
        "replica's jobs are taken over after it (30)",
    ),
    ("--workers", at_least(1, 10_000), 64, None, "jobs run at once (64)"),
    (
        "--runners",
        at_least(1, 256),
        1,
        "N",
        "processes running jobs, --workers split among them: more than one uses more of the "
        "machine's cores (1)",
    ),
    (
        "--queue-bound",
        at_least(1, 10_000_000),
        1000,
        "N",
        "jobs queued or running at once; beyond it a POST gets 429 (1000)",
    ),
    ("--per-token", at_least(1, 10_000), 4, "N", "jobs one token runs at once (4)"),
    (
        "--max-body",
        at_least(1024, 1 << 30),
        2_000_000,
        "BYTES",
        "largest request body; a larger one gets 413 (2000000)",
    ),
    (
        "--header-timeout",
        finite,
        10.0,
        "S",
        "seconds a request's headers may take to arrive; then 408 and the connection "
        "is closed (10)",
    ),
    (
        "--body-timeout",
        finite,
        60.0,
        "S",
        "seconds a request's body may take to arrive after its headers; then 408 (60)",
    ),
)
"""The service's limits a flag sets: flag, type (its range), default, metavar, help.

In the order ``--help`` lists them; :func:`settings` passes each to ``ServiceLimits``."""


def _job_flags(parser: argparse.ArgumentParser) -> None:
    """The jobs group: the database, the service's limits, and its webhooks."""
    jobs = parser.add_argument_group("jobs")
    jobs.add_argument(
        "--database",
        metavar="PATH|URL",
        default="debate-service.sqlite",
        help="SQLite file of jobs, events and the response cache (debate-service.sqlite), "
        "or a postgresql:// URL that several replicas share",
    )
    for flag, kind, default, metavar, text in JOB_LIMITS:
        jobs.add_argument(flag, type=kind, default=default, metavar=metavar, help=text)
    jobs.add_argument(
        "--webhook-secret-env",
        metavar="NAME",
        help="variable holding the HMAC-SHA256 key webhooks are signed with (without it, "
        "a request with a webhook is refused)",
    )
    jobs.add_argument(
        "--allow-private-webhooks",
        action="store_true",
        help="let webhooks reach loopback and private addresses (refused by default: a "
        "client could otherwise make the server call inside your network)",
    )


def serve_command(args: argparse.Namespace) -> int:
    """Check everything, then run the server until SIGTERM or Ctrl-C."""
    if args.print_token_hash is not None:
        from debate.service import token_digest

        sys.stdout.write(token_digest(args.print_token_hash) + "\n")
        return 0
    app, handler = build(args)
    try:
        import uvicorn

        from debate.service import http_protocol
    except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
        raise ConfigurationError(_EXTRA) from exc
    logging.getLogger().handlers[:] = [handler]
    logging.getLogger().setLevel(logging.INFO)
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=DRAIN_S,
        http=http_protocol(settings(args).limits),
    )
    return 0


_EXTRA = 'debate serve: needs the server extra; pip install -e ".[server]"'


def settings(args: argparse.Namespace) -> Any:
    """The service's settings from the flags."""
    from debate.service import ServiceLimits, ServiceSettings

    try:
        limits = ServiceLimits(
            max_body_bytes=args.max_body,
            per_token_concurrency=args.per_token,
            queue_bound=args.queue_bound,
            workers=args.workers,
            runners=args.runners,
            header_timeout_s=args.header_timeout,
            body_timeout_s=args.body_timeout,
            lease_s=args.lease,
        )
    except ValidationError as exc:  # the timeouts and the lease: argparse bounds the rest
        loc = str(exc.errors()[0]["loc"][0])
        flag = "--" + loc.removesuffix("_s").replace("_", "-")
        raise ConfigurationError(
            validation_message(exc, "", {loc: flag}, bounds=ServiceLimits), field=flag
        ) from exc
    return ServiceSettings(
        database=args.database, webhook_secret_env=args.webhook_secret_env, limits=limits
    )


def build(args: argparse.Namespace) -> tuple[Any, logging.Handler]:
    """The app and its log handler; every refusal is a one-line error before the bind."""
    try:
        from debate.service import (
            RunnerProcess,
            RunnerSpec,
            accepted_digests,
            create_app,
            database_target,
            log_handler,
            open_store,
        )
    except ImportError as exc:
        raise ConfigurationError(_EXTRA) from exc
    chosen = settings(args)
    if not accepted_digests(chosen.token_hashes) and not _loopback(args.host):
        raise ConfigurationError(
            f"--host: {args.host} would serve anyone without a token; set "
            "DEBATE_SERVICE_TOKENS to token digests (debate serve --print-token-hash TOKEN) "
            "or use --host 127.0.0.1",
            field="--host",
        )
    config = _config(args)
    database = database_target(chosen.database)
    # A missing key is refused here, before the database is made: the runner process that
    # builds the models would find it only after the server had started.
    ModelPool(config, model_path=args.model_path).check_keys(config)
    spec = RunnerSpec(  # refuses runners it cannot run, before the database is made too
        settings=chosen,
        config=config,
        model_path=args.model_path,
        allow_private_webhooks=args.allow_private_webhooks,
        log_format=args.log_format,
    )
    store = _open_store(open_store, database, chosen.limits.lease_s)
    app = create_app(
        chosen,
        config,
        store=store,
        runner=RunnerProcess(spec, store),
        model_path=args.model_path,
        allow_private_webhooks=args.allow_private_webhooks,
        environ=dict(os.environ),
        freeze_heap=True,
    )
    return app, log_handler(args.log_format, sys.stderr)


def _open_store(store: Callable[..., Any], database: Path | str, lease: float) -> Any:
    """The job store ``database`` names; a file SQLite cannot open is bad input.

    A database PostgreSQL cannot reach is refused, in one line, by the store itself.
    """
    lead = f"--database {database}: cannot open it as a SQLite database"
    remedy = "give the path of a SQLite file this server may write"
    with sqlite_file(lead, remedy, field="--database"):
        return store(database, lease=lease)


def _loopback(host: str) -> bool:
    if host in LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _config(args: argparse.Namespace) -> RunConfig:
    """``--config`` or ``--panel`` with the model flags on top, checked as ``debate run`` does."""
    check_model_flags(args)
    given = {"model": args.model, "base_url": args.base_url, "api_key_env": args.api_key_env}
    return panel_config(args, given, CONFIG_FLAGS)
