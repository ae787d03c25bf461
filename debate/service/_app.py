"""The HTTP API of ``debate serve``: submit jobs, watch their events, read their results.

JSON over HTTP on FastAPI. Bodies are the request models of :mod:`debate.service._models`
and answers are its ``Job``/``Accepted``/``JobEvent`` (a job's ``result`` is the package's
own ``DebateResult``, ``CouncilResult`` or ``Decided``), so the OpenAPI document
(``GET /openapi.json``; ``python -m debate.service._app --openapi``) is generated from the
same models as ``result.json``.

Every error is ``{"error": JobError}``. A POST answers ``202`` with the job's id and a
``Location``; a retried POST with the same ``Idempotency-Key`` (and body) answers ``202``
with the same job, not ``201``/``200``, so a client handles one answer whether or not its
first try got through.

The app depends on the job store and runner only through :class:`JobStoreLike` and
:class:`JobRunnerLike`; :func:`create_app` builds the SQLite store and the runner unless
given others.
"""

from __future__ import annotations

import builtins
import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from debate._gc import freeze_survivors
from debate._version import __version__
from debate.exceptions import ConfigurationError
from debate.records import RunConfig
from debate.runtime import Run
from debate.service._auth import Authenticator, accepted_digests
from debate.service._backend import JobStoreLike, open_store
from debate.service._database import database_target
from debate.service._http import RequestMiddleware
from debate.service._models import (
    Job,
    JobEvent,
    JobKind,
    JobRequest,
    JobSummary,
    ServiceSettings,
)
from debate.service._page import add_page_routes
from debate.service._pgstore import PgJobStore
from debate.service._process import RunnerProcess
from debate.service._routes import (
    BEARER_NOTE,
    HEARTBEAT_S,
    SUBMITS,
    JobRunnerLike,
    Service,
    add_error_handlers,
    add_health_routes,
    add_job_routes,
    add_read_routes,
)
from debate.service._runner import JobRunner
from debate.service._store import JobStore
from debate.service._thread import RunnerThread
from debate.service._webhooks import WebhookSender

logger = logging.getLogger(__name__)


def create_app(
    settings: ServiceSettings,
    config: RunConfig,
    *,
    store: JobStoreLike | None = None,
    runner: JobRunnerLike | None = None,
    make_models: Callable[[], Any] | None = None,
    model_path: str | None = None,
    allow_private_webhooks: bool = False,
    heartbeat: float = HEARTBEAT_S,
    environ: dict[str, str] | None = None,
    freeze_heap: bool = False,
) -> FastAPI:
    """The service's app; jobs run in its runner from start-up to shutdown.

    Args:
        settings: Database, accepted token digests, webhook secret, limits.
        config: The server's run config (a job's ``config`` overrides apply on top).
        store: The job store (default: the one ``settings.database`` names, SQLite or
            PostgreSQL).
        runner: The runner (default: one over ``store`` with ``config``'s models).
        make_models: Test doubles for the default runner (see ``JobRunner``).
        model_path: A GGUF file for the default runner's embedded backend.
        allow_private_webhooks: Let webhooks reach loopback and private addresses.
        heartbeat: Seconds between SSE keep-alive comments.
        environ: Where ``DEBATE_SERVICE_TOKENS`` and the webhook secret are read.
        freeze_heap: Once the runner has started (its models built), freeze every object
            alive (:func:`debate._gc.freeze_survivors`), so a full collection scans only
            what jobs made and no longer stalls the requests in flight. For a process that
            is the server alone (``debate serve``); it holds for the whole process.

    Raises:
        ConfigurationError: a bad token digest, or a webhook secret variable that is unset.
    """
    env = dict(os.environ) if environ is None else environ
    auth = Authenticator(accepted_digests(settings.token_hashes, env))
    webhooks = _webhook_sender(settings, env, allow_private_webhooks)
    if store is None or runner is None:
        store, runner = _default_service(settings, config, store, make_models, model_path)
    path = getattr(store, "path", None)
    # A runner process hosts itself (and sends the webhooks); any other gets its own thread.
    hosted = runner if isinstance(runner, RunnerProcess) else RunnerThread(runner)
    service = Service(
        settings=settings,
        store=store,
        runner=hosted,
        auth=auth,
        webhooks=webhooks,
        allow_private_webhooks=allow_private_webhooks,
        heartbeat=heartbeat,
        database=Path(path) if path is not None else None,
        config=config,
    )
    if isinstance(hosted, RunnerThread):
        hosted.on_finished = service.finished
    return _assemble(service, freeze_heap)


def _assemble(service: Service, freeze_heap: bool = False) -> FastAPI:
    """The FastAPI app of a service: routes, error handlers, middleware, document."""
    app = FastAPI(
        title="debate service",
        version=__version__,
        description=(__doc__ or "").split("\n\n")[0],
        lifespan=_lifespan(service, freeze_heap),
    )
    app.state.service = service
    add_error_handlers(app)
    add_job_routes(app, service)
    add_read_routes(app, service)
    add_health_routes(app, service)
    add_page_routes(app, service)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    app.add_middleware(
        RequestMiddleware, max_body=service.settings.limits.max_body_bytes, auth=service.auth
    )
    return app


def _default_service(
    settings: ServiceSettings,
    config: RunConfig,
    store: JobStoreLike | None,
    make_models: Callable[[], Any] | None,
    model_path: str | None,
) -> tuple[JobStoreLike, JobRunnerLike]:
    """The store ``settings.database`` names (SQLite or PostgreSQL), and its runner.

    A store of another kind brings its own runner.
    """
    if store is None:
        target = database_target(settings.database)
        store = open_store(target, lease=settings.limits.lease_s)
    if not isinstance(store, (JobStore, PgJobStore)):
        raise ConfigurationError(
            "runner: a store other than JobStore or PgJobStore needs its own runner; pass runner=",
            field="runner",
        )
    if settings.limits.runners > 1:  # a thread runner is one: say so rather than run one
        raise ConfigurationError(
            f"runners: {settings.limits.runners} runner processes are started by debate serve "
            "(pass runner=RunnerProcess(...)); the app's own runner is one thread, so give "
            "runners=1",
            field="runners",
        )
    runner = JobRunner(
        store, settings, make_models=make_models, config=config, run=Run(model_path=model_path)
    )
    return store, runner


def _webhook_sender(
    settings: ServiceSettings, env: dict[str, str], allow_private: bool
) -> WebhookSender | None:
    """The signer and sender of webhooks; None when no secret is configured."""
    name = settings.webhook_secret_env
    if name is None:
        return None
    secret = env.get(name, "")
    if not secret:
        raise ConfigurationError(
            f"--webhook-secret-env: {name} is not set; export the webhook secret in {name}",
            field="--webhook-secret-env",
        )
    return WebhookSender(secret.encode("utf-8"), allow_private=allow_private)


def _lifespan(service: Service, freeze_heap: bool) -> Callable[[FastAPI], Any]:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await service.runner.start()
        if freeze_heap:
            freeze_survivors(collect=True)
        service.running = True
        logger.info("runner started")
        try:
            yield
        finally:  # SIGTERM: stop taking jobs; a running job goes back to the queue
            service.running = False
            await service.runner.stop()
            if service.webhooks is not None:
                await service.webhooks.aclose()
            logger.info("runner stopped")

    return lifespan


# -- OpenAPI ---------------------------------------------------------------------------------

DOCUMENTED: tuple[type[BaseModel], ...] = (*(model for _, _, model, _ in SUBMITS), JobEvent)
"""Models the routes read or stream themselves, so FastAPI does not see them: the request
bodies (parsed by the app, for the CLI's error messages) and the events."""


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's document, with the schemas of :data:`DOCUMENTED` and the bearer scheme."""
    if app.openapi_schema is not None:
        return app.openapi_schema
    document = get_openapi(
        title=app.title, version=app.version, description=app.description, routes=app.routes
    )
    _, defs = models_json_schema(
        [(model, "validation") for model in DOCUMENTED],
        ref_template="#/components/schemas/{model}",
    )
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in defs.get("$defs", {}).items():
        schemas.setdefault(name, schema)
    document["components"]["securitySchemes"] = {
        "bearer": {"type": "http", "scheme": "bearer", "description": BEARER_NOTE}
    }
    document["security"] = [{"bearer": []}]
    app.openapi_schema = document
    return document


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document of the app (no runner is started, no database opened)."""
    app = create_app(
        ServiceSettings(), RunConfig(), store=_NoStore(), runner=_NoRunner(), environ={}
    )
    return app.openapi()


class _NoStore:
    """A store that holds nothing: enough to build the app for its document."""

    def submit(self, kind: JobKind, request: JobRequest, **how: Any) -> tuple[Job, bool]:
        raise NotImplementedError

    def get(self, job_id: str) -> Job | None:
        return None

    def request(self, job_id: str) -> JobRequest | None:
        return None

    def owns(self, job_id: str, token: str | None) -> bool:
        return False

    def list(self, limit: int = 100, token: str | None = None) -> builtins.list[Job]:
        return []

    def summaries(self, *args: Any, **filters: Any) -> builtins.list[JobSummary]:
        return []

    def active(self, token: str | None = None) -> int:
        return 0

    def events(self, job_id: str, after: int = 0) -> builtins.list[JobEvent]:
        return []


class _NoRunner:
    on_finished: Callable[[Job], Any] | None = None

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    def wake(self) -> None:
        return None

    def cancel(self, job_id: str) -> Job | None:
        return None


def main(argv: list[str]) -> int:
    """``python -m debate.service._app --openapi``: print the OpenAPI document."""
    if argv != ["--openapi"]:
        sys.stderr.write("usage: python -m debate.service._app --openapi > docs/openapi.json\n")
        return 2
    sys.stdout.write(json.dumps(openapi_document(), indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover - how docs/openapi.json is regenerated
    raise SystemExit(main(sys.argv[1:]))
