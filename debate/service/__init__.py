"""The service for integrations: HTTP API with durable jobs, an MCP server, a page.

An optional extra (``pip install -e ".[server]"``); nothing below imports it.

Every name is imported on first use (PEP 562): the server, the MCP tools and the job stores
need the optional extra's packages, which only ``serve`` and ``mcp`` load.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from debate._faces import lazy_names

if TYPE_CHECKING:
    from debate.service._app import create_app
    from debate.service._auth import accepted_digests, token_digest
    from debate.service._backend import open_store
    from debate.service._database import database_target
    from debate.service._http import log_handler
    from debate.service._mcp import build_server, serve
    from debate.service._models import ServiceLimits, ServiceSettings
    from debate.service._process import RunnerProcess, RunnerSpec
    from debate.service._timeouts import http_protocol

_MODULES: dict[str, tuple[str, ...]] = {
    "debate.service._app": ("create_app",),
    "debate.service._auth": (
        "accepted_digests",
        "token_digest",
    ),
    "debate.service._backend": ("open_store",),
    "debate.service._database": ("database_target",),
    "debate.service._http": ("log_handler",),
    "debate.service._mcp": (
        "build_server",
        "serve",
    ),
    "debate.service._models": (
        "ServiceLimits",
        "ServiceSettings",
    ),
    "debate.service._process": (
        "RunnerProcess",
        "RunnerSpec",
    ),
    "debate.service._timeouts": ("http_protocol",),
}
"""Where each lazily imported name lives; the TYPE_CHECKING imports say the same to mypy."""

__all__ = [
    "RunnerProcess",
    "RunnerSpec",
    "ServiceLimits",
    "ServiceSettings",
    "accepted_digests",
    "build_server",
    "create_app",
    "database_target",
    "http_protocol",
    "log_handler",
    "open_store",
    "serve",
    "token_digest",
]

__getattr__, __dir__ = lazy_names(globals(), _MODULES)
