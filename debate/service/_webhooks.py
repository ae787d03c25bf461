"""Webhooks: the finished job, POSTed to the URL its request named, signed with HMAC-SHA256.

The receiver checks ``X-Debate-Signature: sha256=<hex>``, the HMAC-SHA256 of the raw body
under the shared secret (the environment variable ``settings.webhook_secret_env`` names),
and may refuse an old ``X-Debate-Timestamp`` (seconds since the epoch) to stop replays.

A webhook URL is a request to make this server send HTTP somewhere, so it is checked
twice against server-side request forgery: at submit (http or https, and a host whose
every address is public) and again before each delivery (a name may resolve elsewhere by
then). Loopback, private, link-local and reserved addresses are refused unless the server
was started with ``--allow-private-webhooks``. Redirects are not followed, since one could
lead to an address the check refused.

Delivery runs in the background: three tries with a doubling pause, each failure logged;
the runner that finished the job never waits for it.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import logging
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import urlsplit

from debate.exceptions import ConfigurationError
from debate.service._models import Job

logger = logging.getLogger(__name__)

TRIES = 3
TIMEOUT_S = 10.0
SIGNATURE_HEADER = "X-Debate-Signature"
TIMESTAMP_HEADER = "X-Debate-Timestamp"

Resolver = Callable[[str], list[str]]
"""Host name to its IP addresses (tests may swap in a fixed table)."""


def sign(secret: bytes, body: bytes) -> str:
    """The ``X-Debate-Signature`` value of a body: ``sha256=<hex HMAC-SHA256>``."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def verify(secret: bytes, body: bytes, signature: str) -> bool:
    """Whether a signature header is the body's (what a receiver runs)."""
    return hmac.compare_digest(sign(secret, body), signature)


def resolve(host: str) -> list[str]:
    """Every IP address a host name resolves to (an address literal: itself)."""
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass  # a name: ask the resolver
    infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    return sorted({str(info[4][0]) for info in infos})


def check_url(url: str, *, allow_private: bool, resolver: Resolver = resolve) -> str:
    """The webhook URL if this server may POST to it.

    Raises:
        ConfigurationError: (field ``webhook``) not http(s), no host, a host that does not
            resolve, or one that resolves to a non-public address without
            ``allow_private``.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(
            f"webhook: {url!r} is not an http(s) URL; give e.g. https://example.com/hook",
            field="webhook",
        )
    if allow_private:
        return url
    try:
        addresses = resolver(parts.hostname)
    except OSError as exc:
        raise ConfigurationError(
            f"webhook: cannot resolve {parts.hostname} ({exc}); give a reachable host",
            field="webhook",
        ) from exc
    inner = [a for a in addresses if not ipaddress.ip_address(a.split("%")[0]).is_global]
    if inner or not addresses:
        raise ConfigurationError(
            f"webhook: {parts.hostname} is a private, loopback or reserved address; "
            "give a public host, or start the server with --allow-private-webhooks",
            field="webhook",
        )
    return url


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an error: its target was not checked."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        """Follow no redirect."""
        return None


_OPENER = urllib.request.build_opener(_NoRedirect())


class WebhookSender:
    """Delivers finished jobs to their webhooks, in background tasks.

    Args:
        secret: The HMAC key.
        allow_private: Deliver to loopback and private addresses too.
        backoff: Seconds before the second try (doubled before the third).
        resolver: Host name to addresses, for the check before each delivery.
    """

    def __init__(
        self,
        secret: bytes,
        *,
        allow_private: bool = False,
        backoff: float = 1.0,
        resolver: Resolver = resolve,
    ) -> None:
        self.secret = secret
        self.allow_private = allow_private
        self.backoff = backoff
        self.resolver = resolver
        self._tasks: set[asyncio.Task[bool]] = set()

    def send(self, url: str, job: Job) -> asyncio.Task[bool]:
        """Start delivering ``job`` to ``url``; returns at once with the delivery's task."""
        task = asyncio.create_task(self.deliver(url, job), name=f"webhook-{job.id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def deliver(self, url: str, job: Job) -> bool:
        """POST the job, up to :data:`TRIES` times; True once the receiver answered 2xx."""
        body = job.model_dump_json().encode("utf-8")
        for attempt in range(1, TRIES + 1):
            try:
                check_url(url, allow_private=self.allow_private, resolver=self.resolver)
                status = await asyncio.to_thread(self._post, url, body)
            except (OSError, ConfigurationError) as exc:
                reason = str(exc)
            else:
                if 200 <= status < 300:
                    logger.info("webhook of job %s delivered (HTTP %d)", job.id, status)
                    return True
                reason = f"HTTP {status}"
            logger.warning(
                "webhook of job %s: try %d of %d failed: %s", job.id, attempt, TRIES, reason
            )
            if attempt < TRIES:
                await asyncio.sleep(self.backoff * 2 ** (attempt - 1))
        return False

    def _post(self, url: str, body: bytes) -> int:
        headers = {
            "Content-Type": "application/json",
            SIGNATURE_HEADER: sign(self.secret, body),
            TIMESTAMP_HEADER: str(int(time.time())),
            "User-Agent": "debate-service",
        }
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        try:
            with _OPENER.open(request, timeout=TIMEOUT_S) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:  # a non-2xx answer: the status, then a retry
            exc.close()
            return int(exc.code)

    async def aclose(self) -> None:
        """Wait for the deliveries under way (at shutdown)."""
        await asyncio.gather(*self._tasks, return_exceptions=True)


class _Requests(Protocol):
    def request(self, job_id: str) -> Any: ...


async def send_webhook(store: _Requests, webhooks: WebhookSender, job: Job) -> None:
    """Start delivering a job that ended to its request's webhook, if it names one."""
    request = await asyncio.to_thread(store.request, job.id)
    url = getattr(request, "webhook", None)
    if url:
        webhooks.send(url, job)
