"""``run.json``: what varies between two runs of the same debate (times, host, paths, cache).

Keeping these out of ``result.json`` is what lets the same seed and the same model replies
give a byte-identical result. ``run.json`` is written when a run starts (status
``running``) and again when it ends (``finished``, ``failed`` or ``interrupted``), so an
interrupted run's seed can be reused by the next attempt at the same output folder.
"""

from __future__ import annotations

import os
import platform
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from debate._version import __version__
from debate.exceptions import ConfigurationError, DebateError
from debate.records import check_seed, draw_seed
from debate.storage._cache import ResponseCache
from debate.storage._files import write_json_atomic

SeedSource = Literal["flag", "env", "resumed", "repeated", "drawn"]
RunStatus = Literal["running", "finished", "failed", "interrupted"]
"""``running`` while the command works (or if it was killed); ``interrupted`` after Ctrl-C."""


class RunInfo(BaseModel):
    """The circumstances of one run."""

    model_config = ConfigDict(extra="forbid")

    status: RunStatus
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
    """``--seed``, else ``DEBATE_SEED``, else the seed of the run in ``out_dir``, else new."""
    if flag is not None:
        return check_seed(flag), "flag"
    env = os.environ.get("DEBATE_SEED")
    if env is not None:
        try:
            return check_seed(int(env), "DEBATE_SEED"), "env"
        except ValueError as exc:
            raise ConfigurationError(
                f"DEBATE_SEED={env!r} is not an integer; set it to a whole number or unset it"
            ) from exc
    previous = read_run_info(out_dir)
    if previous is not None:
        # The same command in the same folder is the same debate: an unfinished run resumes
        # from the cache, a finished one replays instead of overwriting result.json with a
        # different debate. A new debate takes --seed or another --out.
        return previous.seed, "resumed" if previous.status != "finished" else "repeated"
    return draw_seed(), "drawn"


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


@contextmanager
def recording_run(
    seed: int,
    source: SeedSource,
    argv: list[str],
    out_dir: Path,
    *,
    cache: ResponseCache | None = None,
) -> Iterator[dict[str, object]]:
    """run.json around a command's work: ``running``, then how it ended.

    The block's normal end is ``finished``; a :class:`DebateError` or ``OSError`` is
    ``failed`` (with the message); Ctrl-C is ``interrupted``. The exception is re-raised
    either way: turning it into an exit code is the CLI's job. Whatever the run wrote before
    it stopped (cached replies, finished batch items) stays where it is.

    Yields:
        Fields to add to run.json at the end (the store path, say), filled in by the block.
    """
    info = start_run(seed, source, argv, out_dir)
    end: dict[str, object] = {}

    def close(status: RunStatus, error: str | None = None) -> None:
        if cache is not None:
            end.update(cache=str(cache.path), cache_hits=cache.hits, cache_misses=cache.misses)
        finish_run(info, out_dir, status=status, error=error, **end)

    try:
        yield end
    except KeyboardInterrupt:
        close("interrupted")
        raise
    except (DebateError, OSError) as exc:
        close("failed", str(exc))
        raise
    close("finished")
