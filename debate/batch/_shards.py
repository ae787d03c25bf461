"""``debate batch --shard K/N`` and ``debate merge``: one batch across many machines.

Each machine runs the same batch file with its own ``--shard K/N`` and takes the items
whose id falls to shard K: ``sha256(id)``, its first 8 bytes read as a big-endian number,
modulo N, plus 1. The assignment depends on nothing but the id and N, so every machine and
every re-run agrees on it without talking to the others, and an item keeps its shard when
lines are added to the file. Each shard's ``--out`` folder gets a ``shard.json`` naming
the shard, the batch file (its SHA-256) and the items that are its share.

``debate merge OUT1 OUT2 ... --out OUT`` checks that the folders are every shard of
one batch file exactly once and that each holds a line for each of its items, then writes
one ``results.jsonl``, ``summary.jsonl`` and ``summary.html`` in the file's order (the
same files an unsharded run writes) and links each item's folder into ``OUT`` (a relative
symbolic link; a copy where links cannot be made), so every report stays reachable from
the one summary.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from pydantic import ValidationError

from debate.batch import BatchItem, BatchLine, write_batch_files
from debate.exceptions import ConfigurationError
from debate.records import Frozen
from debate.storage import write_json_atomic

SHARD_FILE = "shard.json"


class ShardRecord(Frozen):
    """``shard.json``: which share of which batch file a folder holds."""

    shard: int
    of: int
    batch_sha256: str
    """Of the batch file's bytes: shards of different files are not merged."""
    items: int
    """Items in the whole file."""
    ids: list[tuple[int, str]]
    """This shard's items: their position in the file (from 0) and id."""


def parse_shard(text: str) -> tuple[int, int]:
    """``--shard K/N``: shard K (1 to N) of N.

    Raises:
        ConfigurationError: not two whole numbers, or K outside 1..N.
    """
    head, sep, tail = text.partition("/")
    try:
        shard, of = int(head), int(tail)
    except ValueError:
        shard = of = 0
        sep = ""
    if not sep or not 1 <= of <= 10_000 or not 1 <= shard <= of:
        raise ConfigurationError(
            f"--shard: {text!r} is not K/N with 1 <= K <= N <= 10000; give e.g. 1/4 for the "
            "first of four machines"
        )
    return shard, of


def shard_of(item_id: str, of: int) -> int:
    """The shard (1 to ``of``) an item id falls to."""
    digest = hashlib.sha256(item_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % of + 1


def take_shard(
    items: list[tuple[str, BatchItem]], shard: int, of: int, batch_file: Path, out_dir: Path
) -> list[tuple[str, BatchItem]]:
    """The items of shard ``shard`` of ``of``; records the share in ``out_dir/shard.json``.

    Raises:
        ConfigurationError: ``out_dir`` holds another shard (or another file's).
    """
    mine = [(n, i) for n, (i, _) in enumerate(items) if shard_of(i, of) == shard]
    record = ShardRecord(
        shard=shard,
        of=of,
        batch_sha256=hashlib.sha256(batch_file.read_bytes()).hexdigest(),
        items=len(items),
        ids=mine,
    )
    target = out_dir / SHARD_FILE
    if target.is_file():
        earlier = _record(out_dir)
        if (earlier.shard, earlier.of, earlier.batch_sha256) != (shard, of, record.batch_sha256):
            raise ConfigurationError(
                f"--shard: {out_dir} holds shard {earlier.shard}/{earlier.of} of "
                f"{'this' if earlier.batch_sha256 == record.batch_sha256 else 'another'} "
                "batch file; give each shard its own --out folder"
            )
    write_json_atomic(target, record.model_dump_json(indent=1) + "\n")
    chosen = {i for _, i in mine}
    return [(i, item) for i, item in items if i in chosen]


def merge_shards(folders: list[Path], out_dir: Path) -> list[BatchLine]:
    """Merge every shard's folder of one batch into ``out_dir``; the lines in file order.

    Raises:
        ConfigurationError: a folder is not a shard's, the folders are of different files
            or splits, a shard is given twice or missing, an item is in two shards, or a
            shard's results.jsonl lacks one of its items; ``out_dir`` is one of the shards.
    """
    records = [(folder, _record(folder)) for folder in folders]
    first_folder, first = records[0]
    where: dict[int, Path] = {}
    for folder, record in records:
        if (record.batch_sha256, record.of) != (first.batch_sha256, first.of):
            raise ConfigurationError(
                f"merge: {folder} is shard {record.shard}/{record.of} of another batch "
                f"file or split than {first_folder} ({first.shard}/{first.of}); merge the "
                "shards of one run"
            )
        if record.shard in where:
            raise ConfigurationError(
                f"merge: {where[record.shard]} and {folder} are both shard "
                f"{record.shard}/{record.of}; give each shard once"
            )
        where[record.shard] = folder
    missing = [k for k in range(1, first.of + 1) if k not in where]
    if missing:
        raise ConfigurationError(
            f"merge: shard {missing[0]}/{first.of} is missing; give its --out folder too"
        )
    resolved = {folder.resolve() for folder in folders}
    if out_dir.resolve() in resolved:
        raise ConfigurationError(
            f"merge: --out {out_dir} is one of the shards' folders; give a new folder"
        )
    order: dict[str, int] = {}
    lines: dict[str, BatchLine] = {}
    for folder, record in records:
        theirs = _lines(folder)
        for position, item_id in record.ids:
            if item_id in order:
                raise ConfigurationError(
                    f"merge: item {item_id} is in two shards' folders (the second: "
                    f"{folder}); give each shard once"
                )
            if item_id not in theirs:
                raise ConfigurationError(
                    f"merge: item {item_id} of shard {record.shard}/{record.of} has no "
                    f"line in {folder / 'results.jsonl'}; run that shard again to finish it"
                )
            order[item_id], lines[item_id] = position, theirs[item_id]
    if len(order) != first.items:
        raise ConfigurationError(
            f"merge: the shards hold {len(order)} of the file's {first.items} items; "
            "run every shard of the same file with the same N"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    for folder, record in records:
        for _, item_id in record.ids:
            _link(folder / item_id, out_dir / item_id)
    return write_batch_files(sorted(order, key=order.__getitem__), lines, out_dir)


def _record(folder: Path) -> ShardRecord:
    path = folder / SHARD_FILE
    try:
        return ShardRecord.model_validate_json(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigurationError(
            f"merge: {folder} has no readable {SHARD_FILE} ({exc.strerror or exc}); give "
            "the --out folders of runs with --shard"
        ) from exc
    except (ValidationError, UnicodeDecodeError) as exc:
        raise ConfigurationError(
            f"merge: {path} is not a shard record; give the --out folders of runs with --shard"
        ) from exc


def _lines(folder: Path) -> dict[str, BatchLine]:
    path = folder / "results.jsonl"
    try:
        text = path.read_text(encoding="utf-8")
        return {
            line.id: line
            for line in (BatchLine.model_validate_json(row) for row in text.splitlines() if row)
        }
    except OSError as exc:
        raise ConfigurationError(
            f"merge: cannot read {path} ({exc.strerror or exc}); run that shard first"
        ) from exc
    except (ValidationError, UnicodeDecodeError) as exc:
        raise ConfigurationError(
            f"merge: {path} is not a batch's results.jsonl; give the --out folders of "
            "runs with --shard"
        ) from exc


def _link(source: Path, target: Path) -> None:
    """``target`` leads to ``source``: a relative link (replacing an earlier merge's), or a copy."""
    if not source.is_dir():
        return  # an item that failed before writing anything has no folder
    if target.is_symlink():
        target.unlink()
    elif target.exists():
        raise ConfigurationError(
            f"merge: --out already holds {target} (not a link of an earlier merge); "
            "give an empty or new folder"
        )
    try:
        os.symlink(os.path.relpath(source.resolve(), target.parent.resolve()), target)
    except OSError:
        shutil.copytree(source, target)
