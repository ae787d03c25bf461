"""Joining a Ray cluster for a batch, or starting a local one, and leaving it as it was.

Imported only when a batch runs on Ray (``--engine ray``); Ray is an optional extra.
"""

from __future__ import annotations

import logging
import os
import socket
from pathlib import Path
from typing import Any

from debate.exceptions import ConfigurationError

try:
    import ray
except ImportError:  # pragma: no cover - require_ray says how to install it
    ray = None  # type: ignore[assignment]

REACH_TIMEOUT_S = 5.0
LOCAL_HOST = "127.0.0.1"
"""A local Ray binds here: the batch needs no network beyond this machine."""


def require_ray(flag: str) -> None:
    """Refuse ``flag`` in one line when Ray is not installed."""
    if ray is None:
        raise ConfigurationError(
            f"{flag}: Ray is not installed; pip install 'debate[ray]' (or leave out {flag} "
            "to run the batch in this process)"
        )


def start_ray(address: str | None, cpus: int | None) -> bool:
    """Connect to the cluster at ``address``, or start a local one; True if this started it.

    When this process is already connected (a program or a test that called ``ray.init``)
    that connection is used as it is. A local Ray binds to 127.0.0.1, without dashboard,
    with ``cpus`` CPUs (None: this machine's), and its workers import this very ``debate``
    package (its folder is put first on ``PYTHONPATH``, which they inherit). A cluster's
    machines need ``debate`` installed (the same version) in their own environment.
    """
    require_ray("--engine ray")
    if ray.is_initialized():
        return False
    common: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": False,
        "logging_level": logging.ERROR,
    }
    if address is None:
        # A local Ray's processes inherit this environment: its workers import this very
        # package, whichever folder it was imported from (a checkout, not only an install).
        source = str(Path(__file__).resolve().parents[2])
        before = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (source, before) if p)
        try:
            ray.init(num_cpus=cpus, _node_ip_address=LOCAL_HOST, **common)
        finally:  # Ray's processes have it; this process's environment is left as it was
            if before is None:
                del os.environ["PYTHONPATH"]
            else:
                os.environ["PYTHONPATH"] = before
        return True
    check_address(address)
    try:
        ray.init(address=address, **common)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ConfigurationError(
            f"--ray-address: cannot join a Ray cluster at {address!r} ({exc}); give the "
            "address of a running head node (ray start --head prints it), or leave "
            "--ray-address out for a local Ray"
        ) from exc
    return True


def check_address(address: str) -> None:
    """Refuse a ``host:port`` where nothing listens in one line, within seconds.

    ``ray.init`` itself keeps retrying an address nobody answers for minutes. ``auto`` and
    ``ray://`` addresses are left to Ray (it refuses a missing local cluster at once).
    """
    if address == "auto" or "://" in address:
        return
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigurationError(
            f"--ray-address: {address!r} is not host:port (e.g. 10.0.0.5:6379), auto or "
            "ray://host:port"
        )
    try:
        socket.create_connection((host, int(port)), timeout=REACH_TIMEOUT_S).close()
    except OSError as exc:
        raise ConfigurationError(
            f"--ray-address: nothing answers at {address} ({exc.strerror or exc}); give the "
            "address of a running head node (ray start --head prints it), or leave "
            "--ray-address out for a local Ray"
        ) from exc


def stop_ray() -> None:
    """Leave the cluster (a local Ray this process started stops with it)."""
    ray.shutdown()


def cluster_cpus() -> int:
    """The CPUs of the cluster this process is connected to (at least 1)."""
    resources = ray.cluster_resources()  # type: ignore[no-untyped-call]
    return max(1, int(resources.get("CPU", 1)))
