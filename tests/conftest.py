"""Test set-up: no test may reach a network service other than this machine's loopback."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_LOOPBACK = ("127.", "::1", "localhost")
_real_connect = socket.socket.connect
_real_getaddrinfo = socket.getaddrinfo


def _host_of(address: Any) -> str:
    if isinstance(address, tuple) and address:
        return str(address[0])
    return str(address)


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    if self.family in (socket.AF_INET, socket.AF_INET6):
        host = _host_of(address)
        if not host.startswith(_LOOPBACK):
            raise RuntimeError(f"tests must not reach the network (tried {host})")
    return _real_connect(self, address)


def _guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if host is not None and not str(host).startswith(_LOOPBACK):
        raise RuntimeError(f"tests must not reach the network (looked up {host})")
    return _real_getaddrinfo(host, *args, **kwargs)


@pytest.fixture(autouse=True)
def _isolated_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs recorded by a test go to its own store, never the user's."""
    monkeypatch.setenv("DEBATE_STORE", str(tmp_path / "store.sqlite"))
    monkeypatch.chdir(tmp_path)  # default output folders land in the test's own directory
    monkeypatch.delenv("DEBATE_SEED", raising=False)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    monkeypatch.setattr(socket, "getaddrinfo", _guarded_getaddrinfo)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture(autouse=True)
def _fresh_structured_output_forms() -> Iterator[None]:
    """Each test's servers are new: a form learned from one is not taken to another that
    happens to get the same loopback port."""
    from debate.models.openai import FORMS

    FORMS.clear()
    yield
    FORMS.clear()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """A real PostgreSQL server for the session (tests/support/pg_server.py); skips without one."""
    pytest.importorskip("psycopg")
    from tests.support.pg_server import INSTALL_HINT, PgServer, find_binaries

    binaries = find_binaries()
    if binaries is None:
        pytest.skip(INSTALL_HINT)
    server = PgServer(binaries)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: Any) -> str:
    """The URL of a fresh, empty database on the session's PostgreSQL server."""
    return str(pg_server.new_database())


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[None]:
    """One local Ray of 2 CPUs for every test that asks for it, started once and stopped.

    Started before any test's network guard (a session fixture is set up first), on
    127.0.0.1, without dashboard. ``debate batch --engine ray`` finds it connected and runs
    on it instead of starting its own (and leaves it running).
    """
    import ray

    from debate.batch import start_ray

    start_ray(None, 2)
    yield
    ray.shutdown()
