"""Where a command keeps what it makes: ``--out``, the response cache, the run store.

Each is opened before any model is called: a path that cannot hold it is bad input found at
once, not after every call was paid for.
"""

from __future__ import annotations

import argparse
import sqlite3
from pathlib import Path

from debate._cli.files import refuse_folder, sqlite_file
from debate.exceptions import ConfigurationError
from debate.judgments import TrackRecords
from debate.storage import ResponseCache, RunStore, default_store_path


def store_flags(group: argparse._ArgumentGroup) -> None:
    """``--store`` and ``--no-store``."""
    group.add_argument(
        "--store", metavar="PATH", help="run store (default: DEBATE_STORE or the user data dir)"
    )
    group.add_argument(
        "--no-store",
        action="store_true",
        help="do not record the run (a vote still reads judge track records from the store)",
    )


def store_path(args: argparse.Namespace) -> Path:
    """``--store``, else the default store."""
    return Path(args.store) if args.store else default_store_path()


def open_store(args: argparse.Namespace) -> RunStore | None:
    """The run store, opened now; None with ``--no-store``.

    A path that cannot hold it is bad input, found before any model is called rather than
    after every call was paid for.
    """
    if getattr(args, "no_store", False):
        return None
    return RunStore(store_path(args))


def history(args: argparse.Namespace) -> dict[str, float] | None:
    """The judges' track-record accuracies, read from the run store; None if there is none.

    Read with ``--no-store`` too: that flag means "do not record this run", and a flag about
    recording must not change the verdict, so the same transcript gets the same judge
    weights with and without it. An absent store file is not created here.
    """
    path = store_path(args)
    if not path.is_file():
        return None
    try:
        return TrackRecords(path).all_accuracies()
    except sqlite3.Error as exc:
        raise ConfigurationError(
            f"--store {path}: cannot read the judges' track records ({exc}); "
            "give a run store file or another --store"
        ) from exc


def out_folder(args: argparse.Namespace) -> Path:
    """``--out``, created now: a folder that cannot be made is bad input, found before any work."""
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigurationError(
            f"--out {out}: cannot create the folder ({exc.strerror or exc}); choose another folder"
        ) from exc
    return out


OPENED_CACHES: list[ResponseCache] = []
"""The caches :func:`open_cache` opened, closed by :func:`close_caches` when a command ends.

Held here, not weakly: a run drops its cache while the worker threads' connections are
still referenced from their (finished) threads, and those stay open until collected."""


def close_caches() -> None:
    """Close the response caches the command opened, every thread's connection.

    The command's work is over: nothing reads them any more, and closing folds each one's
    write-ahead log into its file, so ``cache.sqlite`` holds every reply on its own even
    when the process then exits without collecting its objects (:func:`debate._cli.main.main`).
    """
    while OPENED_CACHES:
        OPENED_CACHES.pop().close()


def open_cache(args: argparse.Namespace, out: Path) -> ResponseCache | None:
    """``--cache``, else ``OUT/cache.sqlite``; None with ``--no-cache``."""
    if args.no_cache:
        return None
    path = Path(args.cache) if args.cache else out / "cache.sqlite"
    flag = "--cache" if args.cache else "--out"
    lead = f"{flag}: cannot open the response cache {path}"
    with sqlite_file(lead, "give a file path (SQLite) or use --no-cache"):
        refuse_folder(path)
        cache = ResponseCache(path)
    OPENED_CACHES.append(cache)
    return cache
