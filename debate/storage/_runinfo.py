"""``run.json``: what varies between two runs of the same debate (times, host, paths, cache).

Keeping these out of ``result.json`` is what lets the same seed and the same model replies
give a byte-identical result. ``run.json`` is written when a run starts (status
``running``) and again when it ends, so an interrupted run's seed can be reused by the
next attempt at the same output folder.
"""

from __future__ import annotations

import os
import platform
import secrets
import socket
import sys
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from debate._version import __version__
from debate.exceptions import ConfigurationError
from debate.storage._files import write_json_atomic

SeedSource = Literal["flag", "env", "resumed", "drawn"]


class RunInfo(BaseModel):
    """The circumstances of one run."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["running", "finished", "failed", "interrupted"]
    seed: int
    seed_source: SeedSource
    started: float
    finished: float | None = None
    elapsed: float | None = None
    argv: list[str]
    cwd: str
    host: str
    python: str
    platform: str
    version: str = __version__
    cache: str | None = None
    cache_hits: int | None = None
    cache_misses: int | None = None
    store: str | None = None
    error: str | None = None


def resolve_seed(flag: int | None, out_dir: Path) -> tuple[int, SeedSource]:
    """``--seed``, else ``DEBATE_SEED``, else an unfinished run's seed in ``out_dir``, else new."""
    if flag is not None:
        return flag, "flag"
    env = os.environ.get("DEBATE_SEED")
    if env is not None:
        try:
            return int(env), "env"
        except ValueError as exc:
            raise ConfigurationError(
                f"DEBATE_SEED={env!r} is not an integer; set it to a whole number or unset it"
            ) from exc
    previous = read_run_info(out_dir)
    if previous is not None and previous.status != "finished":
        return previous.seed, "resumed"
    return secrets.randbelow(2**31), "drawn"


def read_run_info(out_dir: Path) -> RunInfo | None:
    """The run.json in ``out_dir``, if there is a readable one."""
    path = out_dir / "run.json"
    try:
        return RunInfo.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError):
        return None


def start_run(seed: int, source: SeedSource, argv: list[str], out_dir: Path) -> RunInfo:
    """Write run.json with status ``running`` and return it."""
    info = RunInfo(
        status="running",
        seed=seed,
        seed_source=source,
        started=time.time(),
        argv=argv,
        cwd=os.getcwd(),
        host=socket.gethostname(),
        python=sys.version.split()[0],
        platform=platform.platform(),
    )
    write_json_atomic(out_dir / "run.json", info.model_dump_json(indent=2) + "\n")
    return info


def finish_run(info: RunInfo, out_dir: Path, **changes: object) -> RunInfo:
    """Rewrite run.json with the end state."""
    end = time.time()
    done = info.model_copy(update={"finished": end, "elapsed": end - info.started, **changes})
    write_json_atomic(out_dir / "run.json", done.model_dump_json(indent=2) + "\n")
    return done
