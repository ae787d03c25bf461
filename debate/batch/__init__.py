"""Many debates at once: one shared model pool, a global limiter, resumable, isolated failures.

Each line of the input JSONL is a debate (``topic``) or a transcript to judge
(``transcript``), with an optional ``id`` and optional ``config`` overrides. Items run
``concurrency`` at a time; each finished item writes ``OUT/<id>/result.json`` (and its
reports), the batch writes ``results.jsonl`` and a summary of every item (``summary.jsonl``,
``summary.html``), and re-running the batch skips the finished items (and replays
completed calls of unfinished ones from the shared response cache). One item's failure is
recorded and never stops the others.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from pydantic import Field, PrivateAttr, ValidationError, field_validator, model_validator

from debate._checks import repeated
from debate._faces import lazy_names
from debate.api import judge_transcript, run_debate, write_result
from debate.exceptions import ConfigurationError, DebateError
from debate.records import (
    MAX_CONCURRENCY,
    DebateResult,
    Frozen,
    NotUnicodeError,
    RunConfig,
    Transcript,
    build_config,
    check_topic,
    check_unicode,
    without_surrogates,
)
from debate.report import BatchSummaryLine, write_batch_summary, write_report
from debate.runtime import (
    Event,
    EventHandler,
    ItemFinished,
    Run,
    StepFinished,
    owned_pool,
    planned_calls,
)
from debate.storage import RunStore, read_jsonl, validated, write_json_atomic

if TYPE_CHECKING:
    from debate.batch._processes import run_batch_processes
    from debate.batch._ray import run_batch_ray
    from debate.batch._ray_cluster import check_address, require_ray, start_ray, stop_ray
    from debate.batch._shards import merge_shards, parse_shard, take_shard

MAX_WORKERS = 256
"""Workers of a batch on Ray at most (``--workers``)."""
SAFE_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}")
"""An item id names its folder under ``--out``: one path component that cannot climb out of
it (``..``), hide (``.name``) or mean the folder itself (``.``); matched with ``fullmatch``."""


class BatchItem(Frozen):
    """One line of a batch file."""

    id: str | None = None
    topic: str | None = None
    transcript: Transcript | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    """Overrides of the batch's run config for this item (e.g. judges, arguments)."""
    _not_unicode: str | None = PrivateAttr(default=None)
    """Why the item cannot run: its text holds a lone surrogate (see :func:`load_batch`).
    Not a field: only the reader sets it, never a line of the file."""

    @field_validator("topic")
    @classmethod
    def _topic(cls, value: str | None) -> str | None:
        return None if value is None else check_topic(value)

    @model_validator(mode="after")
    def _one_kind(self) -> BatchItem:
        if (self.topic is None) == (self.transcript is None):
            raise ValueError("give exactly one of topic (a debate) or transcript (to judge)")
        if self.id is not None and not SAFE_ID.fullmatch(self.id):
            raise ValueError(
                f"id {self.id!r} must be 1 to 100 letters, digits, '.', '_' or '-', not "
                "starting with '.'; it names the item's folder under --out"
            )
        return self


class BatchLine(Frozen):
    """One line of results.jsonl."""

    id: str
    status: Literal["ok", "failed"]
    outcome: str | None = None
    winner: str | None = None
    margin: float | None = None
    alpha: float | None = None
    kappa: float | None = None
    calls: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    skipped: int | None = None
    """Calls the batch's budget did not let start (listed in the item's result.json)."""
    error: str | None = None

    @classmethod
    def of(cls, item_id: str, result: DebateResult) -> BatchLine:
        """The summary line of a finished item."""
        u = result.usage
        return cls(
            id=item_id,
            status="ok",
            outcome=result.decision.outcome,
            winner=result.decision.winner,
            margin=result.vote.margin,
            alpha=result.agreement.alpha,
            kappa=result.agreement.kappa,
            calls=u.calls,
            prompt_tokens=u.prompt_tokens,
            completion_tokens=u.completion_tokens,
            cached_tokens=u.cached_tokens,
            cost_usd=u.cost_usd,
            skipped=len(u.skipped),
        )


def load_batch(path: str | Path) -> list[tuple[str, BatchItem]]:
    """Read and validate every line first, so a typo on line 900 fails before any work.

    Text that is not Unicode (a lone surrogate) is the one thing left to the item: it is
    in that item's own text, so that item fails when it runs and the others run. The rest
    of such a line is checked as any other (with the text's surrogates replaced, for the
    check only).
    """
    items = []
    for number, data in read_jsonl(path, "batch file", unicode=False):
        where = f"batch file {path} line {number}"
        try:
            check_unicode(data, "")
        except NotUnicodeError as exc:
            item = validated(BatchItem, without_surrogates(data), where)
            item._not_unicode = str(exc)
        else:
            item = validated(BatchItem, data, where)
        items.append((item.id or f"item-{number}", item))
    ids = [i for i, _ in items]
    dupes = repeated(ids)
    if dupes:
        raise ConfigurationError(f"batch file {path}: id {dupes[0]} is used twice")
    if not items:
        raise ConfigurationError(f"batch file {path}: no items; write one JSON object per line")
    return items


class Progress:
    """Done / running / failed, calls/s, tokens/s and ETA, on one refreshed stderr line."""

    def __init__(
        self,
        total: int,
        stream: TextIO | None = None,
        interval: float = 1.0,
        listener: EventHandler | None = None,
    ) -> None:
        self.total = total
        self.stream = stream
        self.listener = listener
        """Also receives every event (each call's, each item's end): ``--progress jsonl``."""
        self.interval = interval
        self.start = time.perf_counter()
        self.done = self.running = self.failed = self.skipped = 0
        self.calls = self.tokens = 0
        self._last = 0.0

    def on_event(self, event: Event) -> None:
        """Count a finished call; pass every event on to the listener."""
        if self.listener is not None:
            self.listener(event)
        if isinstance(event, StepFinished):
            self.calls += event.attempts
            self.tokens += event.prompt_tokens + event.completion_tokens
            self.show()

    def line(self) -> str:
        """The progress line."""
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        finished = self.done + self.failed
        worked = finished - self.skipped
        remaining = self.total - finished
        eta = "?" if worked <= 0 else f"{elapsed / worked * remaining:.0f}s"
        return (
            f"[batch] {finished}/{self.total} finished ({self.done} ok, {self.failed} failed, "
            f"{self.skipped} skipped), {self.running} running | {self.calls / elapsed:.1f} "
            f"calls/s, {self.tokens / elapsed:.0f} tokens/s | ETA {eta}"
        )

    def show(self, force: bool = False) -> None:
        """Refresh the line at most once per ``interval``."""
        if self.stream is None:
            return
        now = time.perf_counter()
        if force or now - self._last >= self.interval:
            self._last = now
            end = "\r" if self.stream.isatty() and not force else "\n"
            self.stream.write(self.line() + end)
            self.stream.flush()


async def run_batch(
    items: list[tuple[str, BatchItem]],
    *,
    config: RunConfig,
    out_dir: Path,
    concurrency: int = 8,
    run: Run | None = None,
    seed: int = 0,
    progress: Progress | None = None,
    store: RunStore | None = None,
    **legacy: Any,
) -> list[BatchLine]:
    """Run every item; return one line per item in input order.

    Every item's config and output folder is checked before the first call, so a bad item
    on line 900 is bad input (ConfigurationError) rather than a failure found hours in.
    ``results.jsonl`` and the summary (``summary.jsonl``, ``summary.html``) are written
    however the batch ends: cancelled (Ctrl-C), they hold the items that finished.
    ``run`` is shared by every item: one pool (built here when it has none), one cache,
    one limiter, one budget (one cap over every item), the track records that weight
    every item's vote as they weight a single run's (:mod:`debate.judgments._track`); its
    event handler is replaced by ``progress``. Each finished result is recorded in
    ``store`` for the audit. ``**legacy``: deprecated, the fields of ``Run`` one by one.
    """
    run = Run.of(run, legacy, "run_batch")
    check_concurrency(concurrency)
    plans = item_plans(items, config, out_dir)
    progress = progress or Progress(len(items))
    lines: dict[str, BatchLine] = {}
    try:
        async with owned_pool(run.pool, config, seed=seed, model_path=run.model_path) as shared:
            each = run.with_(pool=shared, on_event=progress.on_event)
            for item_id, item in items:  # every item's models, keys and prices, before any call
                _prepare(item, item_id, plans[item_id][1], each)
            await run_items(items, plans, lines, each, concurrency, seed, progress, store)
    finally:  # also when cancelled: the finished items' lines are kept
        progress.show(force=True)
        ordered = write_batch_files([i for i, _ in items], lines, out_dir)
    return ordered


async def run_items(
    items: list[tuple[str, BatchItem]],
    plans: Mapping[str, tuple[Path, RunConfig]],
    lines: dict[str, BatchLine],
    run: Run,
    concurrency: int,
    seed: int,
    progress: Progress,
    store: RunStore | None,
) -> None:
    """Run prepared ``items`` ``concurrency`` at a time on ``run`` (its pool set).

    Each item's line goes into ``lines``; an item an earlier run finished gets its line
    without a call. One process's share of a batch: :func:`run_batch` runs every item
    through it, each process of :func:`~debate.batch._processes.run_batch_processes` its
    own.
    """
    gate = asyncio.Semaphore(concurrency)

    async def one(item_id: str, item: BatchItem) -> None:
        folder, cfg = plans[item_id]
        if (done := finished_line(item_id, folder, progress)) is not None:
            lines[item_id] = done
            return
        async with gate:
            progress.running += 1
            try:
                work = _run_item(item, cfg, run, seed)
                lines[item_id] = line = await _kept(work, item_id, folder, store, lines)
                progress.on_event(ItemFinished(item_id, line.status, line.outcome))
                if line.status == "ok":
                    progress.done += 1
                else:
                    progress.failed += 1
            finally:
                progress.running -= 1
                progress.show()

    await asyncio.gather(*(one(i, item) for i, item in items))


def write_batch_files(
    ids: list[str], lines: Mapping[str, BatchLine], out_dir: Path
) -> list[BatchLine]:
    """``results.jsonl``, ``summary.jsonl`` and ``summary.html``: the lines in ``ids``' order.

    Items without a line (not finished when the batch stopped) are left out.
    """
    ordered = [lines[i] for i in ids if i in lines]
    text = "".join(line.model_dump_json() + "\n" for line in ordered)
    write_json_atomic(out_dir / "results.jsonl", text)
    write_batch_summary([summary_line(line, out_dir) for line in ordered], out_dir)
    return ordered


def summary_line(line: BatchLine, out_dir: Path) -> BatchSummaryLine:
    """An item's line in ``summary.jsonl``, with its report's path when it has one."""
    report = Path(line.id) / "report.html"
    shared = line.model_dump(include=set(BatchSummaryLine.model_fields) - {"report"})
    return BatchSummaryLine(
        **shared, report=report.as_posix() if (out_dir / report).is_file() else None
    )


def planned_batch_calls(
    items: list[tuple[str, BatchItem]], config: RunConfig, out_dir: Path
) -> int:
    """Calls the batch will make: each unfinished item's, under its own config.

    Items whose result an earlier run wrote are skipped, so they are not counted either.
    """
    return sum(
        planned_calls(item_config(item, config, i), debate=item.topic is not None)
        for i, item in items
        if _finished(item_folder(out_dir, i) / "result.json") is None
    )


def check_concurrency(concurrency: int) -> None:
    """``--concurrency``: 1 to :data:`MAX_CONCURRENCY` items at once."""
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise ConfigurationError(
            f"--concurrency: {concurrency} must be at least 1 and at most {MAX_CONCURRENCY}"
        )


def check_workers(workers: int | None, concurrency: int) -> None:
    """``--workers``: 1 to :data:`MAX_WORKERS`, and no more than ``--concurrency``."""
    if workers is None:
        return
    if not 1 <= workers <= MAX_WORKERS:
        raise ConfigurationError(
            f"--workers: {workers} must be at least 1 and at most {MAX_WORKERS} (1: one worker)"
        )
    if workers > concurrency:
        raise ConfigurationError(
            f"--workers: {workers} workers need --concurrency {workers} or more (items in "
            f"flight in all; each worker runs at least one), not {concurrency}"
        )


def item_folder(out_dir: Path, item_id: str) -> Path:
    """Where an item's result.json goes: a folder inside ``out_dir``, whatever the id says."""
    root = out_dir.resolve()
    folder = (root / item_id).resolve()
    if folder.parent != root:
        raise ConfigurationError(
            f"batch item id {item_id!r} would write outside --out {out_dir}; use letters, "
            "digits, '.', '_' or '-'"
        )
    return out_dir / item_id


def item_config(item: BatchItem, config: RunConfig, item_id: str) -> RunConfig:
    """The batch's config with the item's overrides, checked (before any item runs).

    The overrides apply to the item's calls, not only to its record: ``model``,
    ``base_url``/``api_key_env``, ``endpoints`` and each judge's or side's endpoint choose
    the models the item is run with (a top-level key replaces the batch's value whole).
    """
    if not item.config:
        return config
    return build_config({**config.model_dump(), **item.config}, f"batch item {item_id} config")


def _prepare(item: BatchItem, item_id: str, config: RunConfig, run: Run) -> None:
    """Build the item's models in ``run``'s pool now, so bad input fails the batch first.

    Bad input here: a missing key, or a cost cap over a model that no table prices (the
    endpoints' own tables are checked too).
    """
    assert run.pool is not None  # the batch's pool, set before the items are prepared
    try:
        models = run.pool.prepare(config, debaters=item.topic is not None)
        run.meter(config, (m.name for m in models))
    except ConfigurationError as exc:
        raise ConfigurationError(f"batch item {item_id}: {exc}") from exc


def keep(result: DebateResult, item_id: str, folder: Path, store: RunStore | None) -> BatchLine:
    """Write a finished item's result.json and reports, record it in ``store``; its line.

    The result.json comes first: once it is there a re-run of the batch skips the item.
    """
    write_item_files(result, folder)
    return recorded(result, item_id, store)


def write_item_files(result: DebateResult, folder: Path) -> None:
    """The item's result.json, then its reports (safe in a worker thread)."""
    write_result(result, folder)
    write_report(result, folder)


def recorded(result: DebateResult, item_id: str, store: RunStore | None) -> BatchLine:
    """Record a written item in ``store`` (on the caller's thread, the store's own); its line."""
    if store is not None:
        store.record(result)
    return BatchLine.of(item_id, result)


async def _kept(
    run: Awaitable[DebateResult],
    item_id: str,
    folder: Path,
    store: RunStore | None,
    lines: dict[str, BatchLine],
) -> BatchLine:
    """Await one item's run and keep its result (file, store); a failure is a failed line.

    Bad input found while an item runs (a template with an undefined variable, a missing
    API key) is not the item's failure but the batch's: it stops the batch with the one
    line that names it, since every other item would fail the same way. Text of the item's
    own that is not Unicode (:class:`~debate.records._input.NotUnicodeError`) fails only it.

    The files are written in a worker thread (rendering and fsyncs off the loop: the other
    items' calls go on meanwhile), which a cancellation (Ctrl-C) cannot stop: it is waited
    for, and the item's line put in ``lines`` before the cancellation goes on, so that an
    item with a result.json is in that run's results.jsonl too.
    """
    try:
        result = await run
        writing = asyncio.ensure_future(asyncio.to_thread(write_item_files, result, folder))
        try:
            await asyncio.shield(writing)
        except asyncio.CancelledError:
            await asyncio.wait([writing])
            if writing.exception() is None:
                lines[item_id] = recorded(result, item_id, store)
            raise
        return recorded(result, item_id, store)
    except NotUnicodeError as exc:
        return BatchLine(id=item_id, status="failed", error=f"bad input: {exc}")
    except ConfigurationError:
        raise
    except (DebateError, ValidationError, OSError) as exc:
        return BatchLine(id=item_id, status="failed", error=f"{type(exc).__name__}: {exc}")


def finished_line(item_id: str, folder: Path, progress: Progress) -> BatchLine | None:
    """The line of an item an earlier run finished (counted as done and skipped), or None."""
    finished = _finished(folder / "result.json")
    if finished is None:
        return None
    line = BatchLine.of(item_id, finished)
    progress.done += 1
    progress.skipped += 1
    progress.on_event(ItemFinished(item_id, "ok", line.outcome, skipped=True))
    return line


def unfinished(
    items: list[tuple[str, BatchItem]],
    plans: Mapping[str, tuple[Path, RunConfig]],
    progress: Progress,
) -> tuple[list[tuple[str, BatchItem]], dict[str, BatchLine]]:
    """The items still to run, and the lines of those an earlier run finished (counted)."""
    lines: dict[str, BatchLine] = {}
    todo = []
    for item_id, item in items:
        done = finished_line(item_id, plans[item_id][0], progress)
        if done is None:
            todo.append((item_id, item))
        else:
            lines[item_id] = done
    return todo, lines


def one_of_each(
    todo: list[tuple[str, BatchItem]], plans: Mapping[str, tuple[Path, RunConfig]]
) -> list[tuple[str, BatchItem, RunConfig]]:
    """The first item of each config (the batch's, or an item's own) and kind, in order.

    Items share their config object, so checking these checks every item.
    """
    first: dict[tuple[int, bool], tuple[str, BatchItem, RunConfig]] = {}
    for item_id, item in todo:
        config = plans[item_id][1]
        first.setdefault((id(config), item.topic is None), (item_id, item, config))
    return list(first.values())


def item_plans(
    items: list[tuple[str, BatchItem]], config: RunConfig, out_dir: Path
) -> dict[str, tuple[Path, RunConfig]]:
    """Every item's folder and config, checked before the first call."""
    return {i: (item_folder(out_dir, i), item_config(item, config, i)) for i, item in items}


def _finished(target: Path) -> DebateResult | None:
    try:
        return DebateResult.model_validate_json(target.read_text(encoding="utf-8"))
    except (OSError, ValidationError):
        return None


async def _run_item(item: BatchItem, config: RunConfig, run: Run, seed: int) -> DebateResult:
    """One item's run, with the batch's shared ``run``."""
    if item._not_unicode is not None:
        raise NotUnicodeError(item._not_unicode)
    if item.transcript is not None:
        return await judge_transcript(item.transcript, config=config, seed=seed, run=run)
    assert item.topic is not None
    return await run_debate(item.topic, config=config, seed=seed, run=run)


# The engines (processes, Ray) and the shards import this module's names: loaded on first use.
_MODULES: dict[str, tuple[str, ...]] = {
    "debate.batch._processes": ("run_batch_processes",),
    "debate.batch._ray": ("run_batch_ray",),
    "debate.batch._ray_cluster": (
        "check_address",
        "require_ray",
        "start_ray",
        "stop_ray",
    ),
    "debate.batch._shards": (
        "merge_shards",
        "parse_shard",
        "take_shard",
    ),
}
"""Where each lazily imported name lives; the TYPE_CHECKING imports say the same to mypy."""

__all__ = [
    "BatchItem",
    "BatchLine",
    "Progress",
    "check_address",
    "check_concurrency",
    "check_workers",
    "item_folder",
    "load_batch",
    "merge_shards",
    "parse_shard",
    "planned_batch_calls",
    "require_ray",
    "run_batch",
    "run_batch_processes",
    "run_batch_ray",
    "start_ray",
    "stop_ray",
    "summary_line",
    "take_shard",
    "write_batch_files",
]

__getattr__, __dir__ = lazy_names(globals(), _MODULES)
