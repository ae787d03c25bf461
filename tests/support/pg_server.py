"""A real PostgreSQL server for tests: ``initdb`` and ``pg_ctl`` in a temporary folder.

Debian's ``postgresql`` package puts its binaries in ``/usr/lib/postgresql/<major>/bin``
(not on PATH). PostgreSQL refuses to run as root, and the tests run as root in CI, so there
the cluster belongs to ``nobody`` (the folder is chowned to it and the binaries run under
``runuser``); as any other user it runs as that user. It listens on 127.0.0.1 on a free
port (and on a unix socket in its own folder), with fsync off: the tests check behaviour,
not durability across power loss. :func:`find_binaries` returns None where PostgreSQL is not
installed, and the fixtures skip, saying how to install it.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from tests.support.helpers import free_port

INSTALL_HINT = "PostgreSQL is not installed (apt-get install postgresql, or make test as root)"


def find_binaries() -> Path | None:
    """The folder holding ``initdb``/``pg_ctl`` (the newest major version), or None."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parent.parent.name),
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


class PgServer:
    """One PostgreSQL cluster in a temporary folder, started by :meth:`start`."""

    def __init__(self, binaries: Path, max_connections: int = 300) -> None:
        self.binaries = binaries
        self.folder = Path(tempfile.mkdtemp(prefix="debate-pg-"))
        self.data = self.folder / "data"
        self.port = free_port()
        self.max_connections = max_connections
        self.user = "debate"
        self._as: list[str] = []
        if os.geteuid() == 0:  # postgres will not run as root
            owner = pwd.getpwnam("nobody")
            os.chown(self.folder, owner.pw_uid, owner.pw_gid)
            self._as = ["runuser", "-u", "nobody", "--"]
        self._databases = 0

    def _run(self, *command: str) -> None:
        subprocess.run(
            [*self._as, *command], check=True, capture_output=True, cwd=self.folder, timeout=120
        )

    def start(self) -> None:
        self._run(
            str(self.binaries / "initdb"), "-D", str(self.data), "-U", self.user,
            "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C",
        )  # fmt: skip
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.folder} "
            f"-c max_connections={self.max_connections} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c shared_buffers=64MB"
        )
        self._run(
            str(self.binaries / "pg_ctl"), "-D", str(self.data), "-l",
            str(self.folder / "server.log"), "-o", options, "-w", "-t", "60", "start",
        )  # fmt: skip

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database on this server; its URL."""
        import psycopg

        self._databases += 1
        name = f"test_{os.getpid()}_{self._databases}"
        with psycopg.connect(self.url(), autocommit=True) as db:
            db.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        try:
            self._run(
                str(self.binaries / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"
            )
        except subprocess.CalledProcessError:
            pass  # already down
        for _ in range(50):  # the postmaster removes its pid file as it exits
            if not (self.data / "postmaster.pid").exists():
                break
            time.sleep(0.1)
        shutil.rmtree(self.folder, ignore_errors=True)
