"""Fuzz every ``debate`` subcommand with bad input: each must end in one line and exit 2.

Run it with one command from a checkout::

    python tests/support/fuzz_cli.py    # every case, each in a subprocess with a time limit
    python tests/support/fuzz_cli.py --jobs 16 --verbose

Each case is a command line (plus the files it names, written fresh into the case's own
folder) that should be refused. A case is classified as

- ``clean``: exit 2 with exactly one line on stderr and no traceback;
- ``traceback``: a Python traceback on stderr (or, in process, an exception out of ``main``);
- ``hang``: still running at the time limit;
- ``multi-line``: refused, but with more than one line on stderr;
- ``accepted``: exit 0 on input that should have been refused;
- ``wrong-exit``: one line, but an exit code other than 2 (1 says "the run failed" where the
  input was at fault).

A case marked ``untouched`` must also leave its folder as it found it: refused before any
output folder, cache or database was made (``tests/cli/test_fuzz_cli.py`` checks it).

The harness prints the counts per subcommand and in total. ``tests/cli/test_fuzz_cli.py`` runs
the same table in process through :func:`debate._cli.main.main`.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]  # run as a script too, so not tests.support's
EXAMPLE = ROOT / "examples" / "meeting_transcript.json"
TOPIC = "Should we ship the new billing system this quarter?"
KINDS = ("clean", "traceback", "hang", "multi-line", "accepted", "wrong-exit")
SCRIPTED = ["--model", "scripted", "--quiet", "--no-store"]


@dataclass(frozen=True)
class Case:
    """One bad input: a command line and the files it needs (paths relative to its folder)."""

    command: str
    label: str
    argv: tuple[str, ...]
    files: dict[str, bytes] = field(default_factory=dict, hash=False)
    folders: tuple[str, ...] = ()
    untouched: bool = False
    """Refused before anything was written: the folder holds only what :func:`prepare` put."""


def _json(data: Any) -> bytes:
    return json.dumps(data).encode("utf-8")


def _jsonl(*rows: Any) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")


@functools.cache
def _example() -> bytes:
    return EXAMPLE.read_bytes()


def transcript(**changes: Any) -> dict[str, Any]:
    """The example transcript with some fields replaced."""
    data: dict[str, Any] = json.loads(_example())
    data.update(changes)
    return data


def _argument(side: str, n: int) -> dict[str, str]:
    return {"id": f"{side}-{n}", "claim": "c", "reasoning": "r", "evidence": "e"}


NON_UTF8 = b"\xff\xfe\x00 not text \x80\n"
DEEP_JSON = b"[" * 200_000 + b"]" * 200_000
"""Nested far past what json parses (it raised RecursionError)."""
DEEP_OBJECTS = b'{"a":' * 200_000 + b"1" + b"}" * 200_000
LONG_NUMBER = b"1" * 5_000
"""More digits than Python turns into an int (it raised ValueError)."""
NOT_UTF8_ARG = "caf\udce9?"
"""The bytes ``caf``, 0xE9, ``?`` (not UTF-8) as Python hands such an argument over."""
RUNAWAY = "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}"
"""Two nested loops of 10^10 steps: this ran 120 s, past --deadline and --timeout."""
TOPIC_COMMANDS = ("run", "judge", "batch")
"""The commands that read a topic table (``--topics``)."""
BLOCKER = "blocker"  # a regular file: nothing can be created under it
BAD_PATHS = {
    "folder": "folder",
    "under a file": f"{BLOCKER}/sub",
    "in /proc": "/proc/debate-fuzz/x",
}


@functools.cache
def _base_files() -> dict[str, bytes]:
    """The files every case's folder holds (built once; :func:`prepare` copies them)."""
    return {
        BLOCKER: b"a file, not a folder\n",
        "nonutf8": NON_UTF8,
        "badjson": b"{not json\n",
        "empty": b"",
        "badtoml": b"x = = 1\n",
        "transcript.json": _example(),
        "topic.jsonl": _jsonl({"topic": TOPIC}),
        "candidates.jsonl": _jsonl({"id": "a", "text": "Yes."}, {"id": "b", "text": "No."}),
        "items.jsonl": _jsonl(
            {"id": "1", "question": "Q?", "a": "yes", "b": "no", "labels": ["a", "a"]}
        ),
        "ratings.csv": b"1,2,3,4\n1,2,3,5\n2,2,3,4\n",
    }


def _unreadable(missing: str) -> dict[str, str]:
    """An input file a command cannot read, by label: absent, a folder, not text, not JSON."""
    return {
        "missing": missing,
        "folder": "folder",
        "non-UTF-8": "nonutf8",
        "bad JSON": "badjson",
        "empty": "empty",
    }


def _flag_cases(command: str, base: list[str]) -> Iterator[Case]:
    """Bad values of the flags every model-running command shares."""
    values = {
        "--timeout": ["abc", "-1", "0", "nan", "inf", "-inf", "1e400", "1e30"],
        "--deadline": ["abc", "-5", "0", "nan", "inf", "1e30"],
        "--max-retries": ["-1", "11", "abc", "99999999999999999999"],
        "--seed": ["-1", "abc", "1.5", str(2**32), str(2**64 + 1), "1" + "0" * 30],
        "--judges": ["", "technical", "technical,wizard", ",,,", "technical,technical"],
        "--presentation": ["sideways"],
        "--topic-classifier": ["oracle"],
        "--aggregate": ["mode", ""],
        "--min-judges": ["1", "0", "-3", "abc", "1.5", "9", "65", "99999999999999999999"],
        "--samples": ["0", "-1", "17", "abc", "1.5", "99999999999999999999"],
    }
    for flag, bad in values.items():
        for value in bad:
            yield Case(command, f"{flag} {value!r}", (*base, flag, value))
    yield Case(command, "--base-url without --model", (*_no_model(base), "--base-url", "x"))
    for name, path in BAD_PATHS.items():
        for flag in ("--out", "--cache", "--store"):
            if (flag, name) == ("--out", "folder"):
                continue  # an existing folder is a good --out
            extra = ("--no-store",) if flag != "--store" else ()
            argv = [a for a in base if flag != "--store" or a != "--no-store"]
            yield Case(command, f"{flag} {name}", (*argv, *extra, flag, path), folders=("folder",))
    yield Case(command, "--store non-sqlite", (*_no(base, "--no-store"), "--store", "nonutf8"))
    for name, path in {"missing": "nope", "a file": BLOCKER, "non-UTF-8 file": "nonutf8"}.items():
        yield Case(command, f"--templates {name}", (*base, "--templates", path))
    yield Case(
        command,
        "--templates syntax error",
        (*base, "--templates", "tpl"),
        files={"tpl/debater_opening.md.jinja": b"{% if %}broken\n", **_judge_tpl("{% for %}")},
    )
    yield Case(
        command,
        "--templates undefined variable",
        (*base, "--templates", "tpl"),
        files={
            "tpl/debater_opening.md.jinja": b"{{ no_such_variable }}\n",
            **_judge_tpl("{{ no_such_variable }}"),
        },
    )
    yield Case(
        command,
        "--templates non-UTF-8 template",
        (*base, "--templates", "tpl"),
        files={"tpl/debater_opening.md.jinja": NON_UTF8, "tpl/judge_system.md.jinja": NON_UTF8},
    )
    for label, include in {"..": "../secret.txt", "absolute": "/etc/hostname"}.items():
        text = f"{{% include {include!r} %}}"
        yield Case(
            command,
            f"--templates include outside the search path ({label})",
            (*base, "--templates", "tpl"),
            files={"tpl/debater_opening.md.jinja": text.encode(), **_judge_tpl(text)},
            untouched=True,
        )
    yield Case(
        command,
        "--templates runaway loops",
        (*base, "--templates", "tpl", "--deadline", "5", "--timeout", "5"),
        files={"tpl/debater_opening.md.jinja": RUNAWAY.encode(), **_judge_tpl(RUNAWAY)},
    )
    yield Case(command, "--out ''", (*base, "--out", ""), untouched=True)
    yield Case(command, "--out not UTF-8", (*base, "--out", f"o{NOT_UTF8_ARG}"), untouched=True)
    weights = {"nan": b"nan", "inf": b"inf", "negative": b"-0.5"}
    for label, weight in weights.items() if command in TOPIC_COMMANDS else ():
        topics = b"[default.weights]\ntechnical = " + weight + b"\nbusiness = 0.25\n"
        yield Case(
            command,
            f"--topics weight {label}",
            (*base, "--topics", "t.toml"),
            {"t.toml": topics},
            untouched=True,
        )
    for name, path in {
        "missing": "nope",
        "folder": "folder",
        "non-UTF-8": "nonutf8",
        "bad TOML": "badtoml",
    }.items():
        for flag in ("--config", "--topics"):
            yield Case(command, f"{flag} {name}", (*base, flag, path), folders=("folder",))
    yield from _config_cases(command, base)
    yield from _panel_cases(command, base)


def _panel_cases(command: str, base: list[str] | tuple[str, ...]) -> Iterator[Case]:
    """``--panel`` takes a shipped preset's name only: never a path, never with --config."""
    for label, value in {
        "unknown": "nope",
        "empty": "",
        "a path": "../examples/meeting_transcript.json",
        "a file name": "cross-family.toml",
        "a data file that is no preset": "../roles",
    }.items():
        yield Case(command, f"--panel {label}", (*base, "--panel", value), untouched=True)
    both = (*base, "--panel", "embedded", "--config", "c.toml")
    yield Case(
        command, "--panel with --config", both, {"c.toml": b"arguments = 2\n"}, untouched=True
    )


def _judge_tpl(text: str) -> dict[str, bytes]:
    """The same text in a template of each kind of command (debate, judge, council)."""
    names = ("judge_system", "council_review", "council_system")
    return {f"tpl/{name}.md.jinja": text.encode("utf-8") for name in names}


def _no_model(argv: list[str]) -> list[str]:
    at = argv.index("--model")
    return argv[:at] + argv[at + 2 :]


def _no(argv: list[str], flag: str) -> list[str]:
    return [a for a in argv if a != flag]


CONFIG_VALUES = {
    "arguments = 'x'": b"arguments = 'x'\n",
    "arguments = 0": b"arguments = 0\n",
    "rounds = 1e30": b"rounds = 1e30\n",
    "max_tokens = 1e20": b"max_tokens = 100000000000000000000\n",
    "max_tokens = 8": b"max_tokens = 8\n",
    "temperature = nan": b"temperature = nan\n",
    "timeout = inf": b"timeout = inf\n",
    "deadline = nan": b"deadline = nan\n",
    "backoff = inf": b"backoff = inf\n",
    "backoff = 1e12": b"backoff = 1e12\n",
    "provider_retries = 1e6": b"provider_retries = 1000000\n",
    "unknown key": b"argumentz = 3\n",
    "one judge": b'[[judges]]\nrole = "technical"\n',
    "thresholds.gap = nan": b"[thresholds]\ngap = nan\n",
    "thresholds.alpha = inf": b"[thresholds]\nalpha = inf\n",
    "council.tie_z = inf": b"[council]\ntie_z = inf\n",
    "judge weight inf": (
        b'[[judges]]\nrole = "technical"\nweights = { logic = inf, evidence = 0.0, '
        b'responsiveness = 0.0, honesty = 0.0 }\n[[judges]]\nrole = "risk"\n'
    ),
    "nested 5,000 deep": b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n",
    "a 5,000-digit number": b"arguments = " + LONG_NUMBER + b"\n",
    "thresholds.gap = -1.0": b"[thresholds]\ngap = -1.0\n",
    "thresholds.alpha = 2": b"[thresholds]\nalpha = 2.0\n",
    "thresholds.kappa = -3": b"[thresholds]\nkappa = -3.0\n",
    "thresholds.variance = 0": b"[thresholds]\nvariance = 0.0\n",
    "thresholds.min_judges = 1": b"[thresholds]\nmin_judges = 1\n",
    "thresholds.min_judges = 5": b"[thresholds]\nmin_judges = 5\n",
    "thresholds.min_judges = 2.5": b"[thresholds]\nmin_judges = 2.5\n",
    "thresholds.aggregate = mode": b'[thresholds]\naggregate = "mode"\n',
    "deliberation.rounds = 2": b"[deliberation]\nrounds = 2\n",
    "deliberation.rounds = -1": b"[deliberation]\nrounds = -1\n",
    "deliberation.rounds = 1.0": b"[deliberation]\nrounds = 1.0\n",
    "deliberation with swap": b"swap = true\n[deliberation]\nrounds = 1\n",
    "deliberation with samples": b"samples = 2\n[deliberation]\nrounds = 1\n",
    "a standby and one regular judge": (
        b'[[judges]]\nrole = "technical"\n[[judges]]\nname = "s"\nrole = "risk"\nstandby = true\n'
    ),
}


def _config_cases(command: str, base: list[str]) -> Iterator[Case]:
    for label, text in CONFIG_VALUES.items():
        argv = (*base, "--config", "c.toml")
        yield Case(command, f"config {label}", argv, {"c.toml": text}, untouched=True)


def run_cases() -> Iterator[Case]:
    base = ["run", TOPIC, *SCRIPTED]
    yield from _flag_cases("run", base)
    for flag, values in {
        "--arguments": ["0", "11", "-1", "abc", "1" + "0" * 20],
        "--rounds": ["-1", "6", "1" + "0" * 30, "abc", "1.5"],
    }.items():
        for value in values:
            yield Case("run", f"{flag} {value!r}", (*base, flag, value))
    for label, topic in {"empty": "", "blank": "  \n\t", "too long": "x" * 2001}.items():
        yield Case("run", f"topic {label}", ("run", topic, *SCRIPTED))
    yield Case("run", "missing API key", ("run", TOPIC, "--model", "gpt-x", "--no-store"))
    yield Case(
        "run", "topic not UTF-8", ("run", NOT_UTF8_ARG, *SCRIPTED, "--out", "o"), untouched=True
    )


def judge_cases() -> Iterator[Case]:
    base = ["judge", "transcript.json", *SCRIPTED]
    yield from _flag_cases("judge", base)
    for name, path in _unreadable("nope.json").items():
        yield Case("judge", f"transcript {name}", ("judge", path, *SCRIPTED), folders=("folder",))
    arguments = transcript()["arguments"]
    many = [_argument(s, n) for s in ("PRO", "CON") for n in range(1, 2001)]
    bad: dict[str, Any] = {
        "a JSON array": [1, 2],
        "a JSON string": "text",
        "no arguments": transcript(arguments=[]),
        "one side only": transcript(arguments=arguments[:2], cross_examinations=[]),
        "id PRO-99999999999999999999": transcript(
            arguments=[{**arguments[0], "id": "PRO-99999999999999999999"}, *arguments[1:]]
        ),
        "id with a newline": transcript(
            arguments=[*arguments[:3], {**arguments[3], "id": "CON-2\n"}]
        ),
        "id PRO-0": transcript(arguments=[{**arguments[0], "id": "PRO-0"}, *arguments[1:]]),
        "duplicate id": transcript(arguments=[*arguments, arguments[0]]),
        "round 10^30": transcript(
            cross_examinations=[{**transcript()["cross_examinations"][0], "round": 10**30}]
        ),
        "round 0": transcript(
            cross_examinations=[{**transcript()["cross_examinations"][0], "round": 0}]
        ),
        "round 'one'": transcript(
            cross_examinations=[{**transcript()["cross_examinations"][0], "round": "one"}]
        ),
        "2000 arguments a side": transcript(arguments=many, cross_examinations=[], closings=[]),
        "unknown key": transcript(extra=1),
        "claim a number": transcript(arguments=[{**arguments[0], "claim": 7}, *arguments[1:]]),
        "empty topic": transcript(topic=""),
        "topic too long": transcript(topic="x" * 2001),
        "side 'MAYBE'": transcript(closings=[{"side": "MAYBE", "statement": "s"}]),
        "target not an argument": transcript(
            cross_examinations=[{**transcript()["cross_examinations"][0], "target": "CON-9"}]
        ),
        "argument text 10 MB": transcript(
            arguments=[{**arguments[0], "reasoning": "x" * 10_000_000}, *arguments[1:]]
        ),
    }
    for label, data in bad.items():
        yield Case("judge", label, ("judge", "t.json", *SCRIPTED), {"t.json": _json(data)})
    for label, raw in {
        "topic a lone surrogate": _json(transcript(topic="\ud800")),
        "claim a lone surrogate": _json(
            transcript(arguments=[{**arguments[0], "claim": "a \udce9 b"}, *arguments[1:]])
        ),
        "nested 200,000 arrays deep": DEEP_JSON,
        "nested 200,000 objects deep": DEEP_OBJECTS,
        "a 5,000-digit round": _json(transcript()).replace(
            b'"round": 1', b'"round": ' + LONG_NUMBER
        ),
    }.items():
        yield Case("judge", label, ("judge", "t.json", *SCRIPTED), {"t.json": raw}, untouched=True)


def _jsonl_file_cases(command: str, argv: Callable[[str], list[str]]) -> Iterator[Case]:
    """A JSONL input that is missing, a folder, not UTF-8, not JSON or empty."""
    for name, path in _unreadable("nope.jsonl").items():
        yield Case(command, f"file {name}", tuple(argv(path)), folders=("folder",))
    for label, rows in {
        "a line that is a list": _jsonl([1, 2]),
        "a line that is a number": _jsonl(7),
    }.items():
        yield Case(command, label, tuple(argv("f.jsonl")), {"f.jsonl": rows})
    for label, raw in {
        "a line nested 200,000 deep": DEEP_JSON + b"\n",
        "a line with a 5,000-digit number": b'{"id": ' + LONG_NUMBER + b"}\n",
    }.items():
        yield Case(command, label, tuple(argv("f.jsonl")), {"f.jsonl": raw}, untouched=True)


def council_cases() -> Iterator[Case]:
    def argv(path: str) -> list[str]:
        return ["council", "Which is right?", "--candidates", path, *SCRIPTED]

    yield from _flag_cases("council", argv("candidates.jsonl"))
    yield from _jsonl_file_cases("council", argv)
    a, b = {"id": "a", "text": "Yes."}, {"id": "b", "text": "No."}
    for label, rows in {
        "one candidate": _jsonl(a),
        "duplicate ids": _jsonl(a, {**b, "id": "a"}),
        "empty text": _jsonl(a, {**b, "text": ""}),
        "text a number": _jsonl(a, {**b, "text": 5}),
        "unknown key": _jsonl(a, {**b, "score": 1}),
        "10,000 candidates": _jsonl(*({"id": f"c{i}", "text": "t"} for i in range(10_000))),
        "text a lone surrogate": _jsonl(a, {**b, "text": "no \ud800"}),
    }.items():
        yield Case("council", label, tuple(argv("c.jsonl")), {"c.jsonl": rows})
    yield Case(
        "council", "empty question", ("council", "", "--candidates", "candidates.jsonl", *SCRIPTED)
    )
    yield Case("council", "--generate one model", ("council", "Q?", "--generate", "a", *SCRIPTED))
    yield Case("council", "--method bad", (*argv("candidates.jsonl"), "--method", "vibes"))


def batch_cases() -> Iterator[Case]:
    def argv(path: str) -> list[str]:
        return ["batch", path, *SCRIPTED]

    yield from _flag_cases("batch", argv("topic.jsonl"))
    yield from _jsonl_file_cases("batch", argv)
    topic = {"topic": TOPIC}
    for label, rows in {
        "id '..'": _jsonl({**topic, "id": ".."}),
        "id '.'": _jsonl({**topic, "id": "."}),
        "id with a slash": _jsonl({**topic, "id": "a/b"}),
        "id '../escape'": _jsonl({**topic, "id": "../escape"}),
        "id empty": _jsonl({**topic, "id": ""}),
        "id with a newline": _jsonl({**topic, "id": "a\n"}),
        "id a number": _jsonl({**topic, "id": 7}),
        "duplicate ids": _jsonl({**topic, "id": "x"}, {**topic, "id": "x"}),
        "topic and transcript": _jsonl({**topic, "transcript": transcript()}),
        "neither topic nor transcript": _jsonl({"id": "x"}),
        "empty topic": _jsonl({"topic": ""}),
        "bad transcript": _jsonl({"transcript": {"topic": "t"}}),
        "item config arguments 99 on line 2": _jsonl(topic, {**topic, "config": {"arguments": 99}}),
        "item config unknown key": _jsonl(topic, {**topic, "config": {"argumentz": 1}}),
        "item config timeout inf": _jsonl(topic, {**topic, "config": {"timeout": float("inf")}}),
        "item config a list": _jsonl({**topic, "config": [1]}),
        "item config one judge": _jsonl(
            topic, {**topic, "config": {"judges": [{"role": "technical"}]}}
        ),
    }.items():
        yield Case("batch", label, tuple(argv("b.jsonl")), {"b.jsonl": rows})
    for flag, values in {
        "--concurrency": ["0", "-3", "abc", "1" + "0" * 12],
        "--rpm": ["0", "-1", "abc", "nan", "1.5"],
        "--tpm": ["0", "-1", "abc"],
        "--workers": ["0", "-1", "abc", "1.5", "257", "9"],  # 9: more than --concurrency 8
        "--engine": ["gpu", "RAY", ""],
        "--ray-address": ["cluster", "host:0", "127.0.0.1:1"],  # 1: nothing listens there
        "--shard": ["0/2", "3/2", "x", "1/0", "1/", "/2", "1/2/3", "-1/2", "a/b", "1/20000"],
    }.items():
        for value in values:
            yield Case("batch", f"{flag} {value!r}", (*argv("topic.jsonl"), flag, value))
    local = (*argv("topic.jsonl"), "--engine", "local")
    yield Case("batch", "--ray-address with --engine local", (*local, "--ray-address", "auto"))
    yield Case("batch", "--workers 2 with --engine local", (*local, "--workers", "2"))
    for name, data in {
        "missing": None,
        "non-UTF-8": NON_UTF8,
        "bad TOML": b"x = = 1\n",
        "negative price": b"[scripted]\nprompt = -1.0\ncompletion = 1.0\n",
        "price nan": b"[scripted]\nprompt = nan\ncompletion = 1.0\n",
    }.items():
        files = {} if data is None else {"p.toml": data}
        yield Case("batch", f"--prices {name}", (*argv("topic.jsonl"), "--prices", "p.toml"), files)


def merge_cases() -> Iterator[Case]:
    def record(shard: int, of: int, ids: list[str]) -> bytes:
        listed = [[n, i] for n, i in enumerate(ids)]
        fields = {"shard": shard, "of": of, "batch_sha256": "0" * 64, "items": 2, "ids": listed}
        return json.dumps(fields).encode()

    def line(item_id: str) -> bytes:
        return json.dumps({"id": item_id, "status": "ok"}).encode() + b"\n"

    base = ("merge", "s1", "s2", "--out", "merged")
    s1 = {"s1/shard.json": record(1, 2, ["a"]), "s1/results.jsonl": line("a")}
    s2 = {"s2/shard.json": record(2, 2, ["b"]), "s2/results.jsonl": line("b")}
    for label, argv, files in (
        ("no folders", ("merge", "--out", "merged"), {}),
        ("no --out", ("merge", "s1", "s2"), {**s1, **s2}),
        ("folders missing", base, {}),
        ("no shard.json", base, {"s1/results.jsonl": line("a"), **s2}),
        ("shard.json not JSON", base, {**s1, "s1/shard.json": b"{", **s2}),
        ("shard.json non-UTF-8", base, {**s1, "s1/shard.json": NON_UTF8, **s2}),
        ("shard missing", ("merge", "s1", "--out", "merged"), s1),
        ("shard twice", ("merge", "s1", "s1", "--out", "merged"), s1),
        ("item missing", base, {**s1, **s2, "s2/results.jsonl": b""}),
        ("results not JSONL", base, {**s1, **s2, "s2/results.jsonl": b"nope\n"}),
        ("no results", base, {**s1, "s2/shard.json": record(2, 2, ["b"])}),
        ("two files", base, {**s1, **s2, "s2/shard.json": record(2, 3, ["b"])}),
        ("--out a shard", ("merge", "s1", "s2", "--out", "s1"), {**s1, **s2}),
    ):
        yield Case("merge", label, argv, files)
    yield Case(
        "merge", "--out ''", ("merge", "s1", "s2", "--out", ""), {**s1, **s2}, untouched=True
    )


def calibrate_cases() -> Iterator[Case]:
    def argv(path: str, fmt: str = "pairwise") -> list[str]:
        return ["calibrate", path, "--format", fmt, *SCRIPTED]

    yield from _flag_cases("calibrate", argv("items.jsonl"))
    for fmt in ("pairwise", "debate"):
        yield from _jsonl_file_cases("calibrate", lambda p, f=fmt: argv(p, f))
    item = {"id": "1", "question": "Q?", "a": "yes", "b": "no", "labels": ["a"]}
    for label, rows in {
        "pairwise missing field": _jsonl({"id": "1", "question": "Q?"}),
        "pairwise label 'c'": _jsonl({**item, "labels": ["c"]}),
        "pairwise no labels": _jsonl({**item, "labels": []}),
        "pairwise labels a string": _jsonl({**item, "labels": "a"}),
    }.items():
        yield Case("calibrate", label, tuple(argv("i.jsonl")), {"i.jsonl": rows})
    for label, rows in {
        "debate missing verdict": _jsonl({"id": "1", "transcript": transcript()}),
        "debate bad verdict": _jsonl({"id": "1", "transcript": transcript(), "verdict": "X"}),
        "debate bad transcript": _jsonl({"id": "1", "transcript": {}, "verdict": "PRO"}),
    }.items():
        yield Case("calibrate", label, tuple(argv("i.jsonl", "debate")), {"i.jsonl": rows})
    for name in ("ukpconvarg", "pandalm"):
        yield Case("calibrate", f"{name} bad JSON", tuple(argv("badjson", name)))
        yield Case("calibrate", f"{name} non-UTF-8", tuple(argv("nonutf8", name)))
    for flag, values in {
        "--concurrency": ["0", "-3", "abc", "1" + "0" * 12],
        "--limit": ["0", "-1", "abc"],
        "--format": ["csv"],
    }.items():
        for value in values:
            yield Case("calibrate", f"{flag} {value!r}", (*argv("items.jsonl"), flag, value))


def store_cases(command: str, extra: list[str]) -> Iterator[Case]:
    for name, path in {**BAD_PATHS, "non-sqlite file": "nonutf8"}.items():
        yield Case(
            command, f"--store {name}", (command, "--store", path, *extra), folders=("folder",)
        )


def leaderboard_cases() -> Iterator[Case]:
    yield from store_cases("leaderboard", [])
    for value in ["abc", "-1", "nan", "inf", "-inf", "1e400", "1e30"]:
        yield Case("leaderboard", f"--since {value!r}", ("leaderboard", "--since", value))


def audit_cases() -> Iterator[Case]:
    yield from store_cases("audit", [])
    yield Case("audit", "unknown flag", ("audit", "--bogus"))


def report_cases() -> Iterator[Case]:
    for name, path in {**_unreadable("nope.json"), "a transcript": "transcript.json"}.items():
        yield Case("report", f"result {name}", ("report", path), folders=("folder",))
    for label, data in {
        "a JSON array": [1],
        "kind 'poem'": {"kind": "poem"},
        "kind a number": {"kind": 3},
        "an empty object": {},
    }.items():
        yield Case("report", label, ("report", "r.json"), {"r.json": _json(data)})
    yield Case("report", "result nested 200,000 deep", ("report", "r.json"), {"r.json": DEEP_JSON})
    yield Case("report", "--out ''", ("report", "r.json", "--out", ""), {"r.json": b"{}"})


def stability_cases() -> Iterator[Case]:
    for name, path in {**_unreadable("nope.json"), "a transcript": "transcript.json"}.items():
        yield Case("stability", f"result {name}", ("stability", path), folders=("folder",))
    for label, data in {
        "a JSON array": [1],
        "kind 'poem'": {"kind": "poem"},
        "an empty object": {},
    }.items():
        yield Case("stability", label, ("stability", "r.json"), {"r.json": _json(data)})
    base = ["stability", "transcript.json", "--model", "scripted"]
    for flag, bad in {
        "--runs": ["0", "-1", "abc", "1.5", "1001", "99999999999999999999"],
        "--samples": ["0", "17", "abc"],
        "--seed": ["-1", "abc", str(2**32)],
    }.items():
        for value in bad:
            yield Case("stability", f"{flag} {value!r}", (*base, flag, value))
    yield Case(
        "stability", "--base-url without --model", ("stability", "r.json", "--base-url", "x")
    )
    yield Case("stability", "unknown flag", (*base, "--bogus"))


def agreement_cases() -> Iterator[Case]:
    base = ["agreement", "ratings.csv"]
    for name, path in {
        "missing": "nope.csv",
        "folder": "folder",
        "non-UTF-8": "nonutf8",
        "empty": "empty",
    }.items():
        yield Case("agreement", f"file {name}", ("agreement", path), folders=("folder",))
    for label, text in {
        "ragged rows": b"1,2,3\n1,2\n",
        "a label in interval data": b"1,2,x\n1,2,3\n",
        "header only": b"a,b,c\n",
        "binary NUL": b"1,2\x00,3\n1,2,3\n",
        "inf values": b"inf,1,2\n1,2,3\n",
    }.items():
        yield Case("agreement", label, ("agreement", "r.csv"), {"r.csv": text})
    for flag, values in {
        "--bootstrap": ["-1", "abc", "1000000000", "1e3"],
        "--seed": ["-1", "abc", str(2**64 + 1)],
        "--level": ["cardinal"],
        "--format": ["cohen"],
    }.items():
        for value in values:
            yield Case("agreement", f"{flag} {value!r}", (*base, flag, value))
    yield Case("agreement", "no file", ("agreement",))
    yield Case("agreement", "two files", ("agreement", "ratings.csv", "ratings.csv"))
    yield Case(
        "agreement", "--domain missing a value", (*base, "--level", "ordinal", "--domain", "1,2")
    )


GOOD_SCORES = (
    b"# scale: 1-5\nitem,option,judge,dimension,score\n"
    b"q,a,j1,d,5\nq,b,j1,d,2\nq,a,j2,d,4\nq,b,j2,d,1\n"
)
GOOD_VERDICTS = b"item,judge,verdict\nq,j1,A\nq,j2,A\nr,j1,B\nr,j2,tie\n"
BAD_TABLES: dict[str, tuple[str, bytes]] = {
    "no header": ("t.csv", b""),
    "header only": ("t.csv", b"item,judge,verdict\n"),
    "a missing column": ("t.csv", b"item,verdict\nq,A\n"),
    "verdict '1'": ("t.csv", b"item,judge,verdict\nq,j1,1\n"),
    "score nan": ("t.csv", b"# scale: 1-5\nitem,option,judge,dimension,score\nq,a,j,d,nan\n"),
    "score inf": ("t.csv", b"# scale: 1-5\nitem,option,judge,dimension,score\nq,a,j,d,inf\n"),
    "score out of scale": (
        "t.csv",
        b"# scale: 1-5\nitem,option,judge,dimension,score\nq,a,j,d,9\n",
    ),
    "no scale": ("t.csv", b"item,option,judge,dimension,score\nq,a,j,d,3\n"),
    "bad scale line": ("t.csv", b"# scale: 5-1\nitem,option,judge,dimension,score\nq,a,j,d,3\n"),
    "a duplicate row": ("t.csv", b"item,judge,verdict\nq,j1,A\nq,j1,B\n"),
    "ragged row": ("t.csv", b"item,judge,verdict\nq,j1\n"),
    "bad JSON line": ("t.jsonl", b'{"item": "q", "judge": "j", "verdict": "A"}\n{oops\n'),
    "a JSON array line": ("t.jsonl", b"[1, 2]\n"),
    "'..' suffix": ("t.txt", b"item,judge,verdict\nq,j,A\n"),
    "scores and verdicts": ("t.csv", b"item,option,judge,dimension,score,verdict\nq,a,j,d,3,A\n"),
    "a 5,000-digit score": (
        "t.jsonl",
        b'{"scale": "1-5"}\n{"item": "q", "option": "a", "judge": "j", "dimension": "d", '
        b'"score": ' + LONG_NUMBER + b"}\n",
    ),
    "a line nested 200,000 deep": ("t.jsonl", DEEP_JSON + b"\n"),
    "a judge a lone surrogate": ("t.jsonl", b'{"item": "q", "judge": "\\udce9", "verdict": "A"}\n'),
}


def _table_file_cases(command: str, tail: tuple[str, ...]) -> Iterator[Case]:
    for name, path in BAD_PATHS.items():
        yield Case(command, f"file {name}", (command, path, *tail), folders=("folder",))
    for label, (name, data) in BAD_TABLES.items():
        yield Case(command, label, (command, name, *tail), {name: data}, untouched=True)


def decide_cases() -> Iterator[Case]:
    files = {"s.csv": GOOD_SCORES, "v.csv": GOOD_VERDICTS}
    yield from _table_file_cases("decide", ())
    for flag, values in {
        "--scale": ["5", "a-b", "5-1", "nan-3", "1-1e308", "1-" + "9" * 400],
        "--dimension": ["nope"],
        "--weights": ["heavy", "missing.json", "folder"],
        "--seed": ["-1", "abc", str(2**64 + 1)],
        "--config": ["nope.toml", "nonutf8"],
        "--track-records": ["folder", "nonutf8"],
        "--aggregate": ["mode"],
        "--min-judges": ["1", "abc", "65"],
    }.items():
        for value in values:
            argv = ("decide", "s.csv", flag, value)
            yield Case("decide", f"{flag} {value!r}", argv, files, folders=("folder",))
    for label, weights in {
        "weights a list": b"[1, 2]",
        "weights bad JSON": b"{oops",
        "weights unknown judge": b'{"j1": 1, "j2": 1, "j3": 1}',
        "weights negative": b'{"j1": -1, "j2": 1}',
        "weights nan": b'{"j1": NaN, "j2": 1}',
        "weights all zero": b'{"j1": 0, "j2": 0}',
    }.items():
        yield Case(
            "decide",
            label,
            ("decide", "s.csv", "--weights", "w.json"),
            {**files, "w.json": weights},
        )
    yield Case("decide", "--dimension on verdicts", ("decide", "v.csv", "--dimension", "d"), files)
    yield Case(
        "decide",
        "--aggregate median on verdicts",
        ("decide", "v.csv", "--aggregate", "median"),
        files,
    )
    yield Case("decide", "--out ''", ("decide", "s.csv", "--out", ""), files, untouched=True)
    yield Case(
        "decide",
        "--config gap -1.0",
        ("decide", "s.csv", "--config", "c.toml"),
        {**files, "c.toml": b"[thresholds]\ngap = -1.0\n"},
        untouched=True,
    )
    yield Case(
        "decide",
        "--out a folder",
        ("decide", "s.csv", "--out", "folder"),
        files,
        folders=("folder",),
    )
    yield Case("decide", "no file", ("decide",))
    for label, policy in {
        "policy not JSON": b"{oops",
        "policy empty object": b"{}",
        "policy another format": b'{"format": "debate-policy/9"}',
    }.items():
        yield Case(
            "decide", label, ("decide", "v.csv", "--policy", "p.json"), {**files, "p.json": policy}
        )
    yield Case("decide", "--policy missing", ("decide", "v.csv", "--policy", "nope.json"), files)
    yield Case(
        "decide",
        "--policy a folder",
        ("decide", "v.csv", "--policy", "folder"),
        files,
        folders=("folder",),
    )
    yield Case(
        "decide",
        "--to-people without --policy",
        ("decide", "v.csv", "--to-people", "d"),
        files,
        untouched=True,
    )


def validity_cases() -> Iterator[Case]:
    files = {"v.csv": GOOD_VERDICTS, "p.csv": GOOD_VERDICTS, "s.csv": GOOD_SCORES}
    yield from _table_file_cases("validity", ("--labels", "p.csv"))
    base = ("validity", "v.csv", "--labels", "p.csv")
    for flag, values in {
        "--folds": ["1", "0", "abc", "1000"],
        "--bootstrap": ["0", "-5", "abc", "1e9"],
        "--seed": ["-1"],
        "--dimension": ["nope"],
        "--aggregate": ["mode"],
        "--min-judges": ["0"],
    }.items():
        for value in values:
            yield Case("validity", f"{flag} {value!r}", (*base, flag, value), files)
    yield Case("validity", "no labels", ("validity", "v.csv"), files)
    yield Case("validity", "labels and people", (*base, "--people", "j1"), files)
    yield Case("validity", "--people unknown", ("validity", "v.csv", "--people", "nobody"), files)
    yield Case("validity", "labels missing", ("validity", "v.csv", "--labels", "nope.csv"), files)
    yield Case(
        "validity", "score labels for verdicts", ("validity", "v.csv", "--labels", "s.csv"), files
    )
    yield Case("validity", "more folds than items", (*base, "--folds", "5"), files)
    yield Case("validity", "--out a file", (*base, "--out", "p.csv"), files)
    yield Case("validity", "--out ''", (*base, "--out", ""), files, untouched=True)
    for flag, values in {
        "--target-agreement": ["0.5", "1", "nan", "abc", "-0.9"],
        "--risk": ["0", "0.6", "nan"],
    }.items():
        for value in values:
            yield Case("validity", f"{flag} {value!r}", (*base, flag, value), files, untouched=True)
    yield Case(
        "validity", "--tiers without a target", (*base, "--tiers", "j1=1"), files, untouched=True
    )
    for tiers in ("j1", "j1=0", "j1=x", "=2"):
        argv = (*base, "--target-agreement", "0.8", "--tiers", tiers)
        yield Case("validity", f"--tiers {tiers!r}", argv, files, untouched=True)
    argv = (*base, "--target-agreement", "0.99", "--risk", "0.01")
    yield Case("validity", "a target the labels cannot support", argv, files)


def example_cases() -> Iterator[Case]:
    other = {"here/judgments.csv": b"item,judge,verdict\nmine,me,A\n"}
    yield Case("example", "no name", ("example",))
    yield Case("example", "unknown name", ("example", "hanna"))
    yield Case("example", "two names", ("example", "pandalm", "pandalm"))
    yield Case("example", "--out a file", ("example", "pandalm", "--out", "f.csv"), {"f.csv": b"x"})
    yield Case("example", "--out empty", ("example", "pandalm", "--out", ""))
    yield Case("example", "--out holds other work", ("example", "pandalm", "--out", "here"), other)
    yield Case(
        "example",
        "--out holds a folder named labels.csv",
        ("example", "pandalm", "--out", "there"),
        folders=("there", "there/labels.csv"),
    )


def panels_cases() -> Iterator[Case]:
    yield Case("panels", "unknown name", ("panels", "cross-familly"), untouched=True)
    yield Case("panels", "empty name", ("panels", ""), untouched=True)
    yield Case("panels", "a path", ("panels", "../roles"), untouched=True)
    yield Case("panels", "a file name", ("panels", "embedded.toml"), untouched=True)
    yield Case("panels", "two names", ("panels", "embedded", "local-only"), untouched=True)
    yield Case("panels", "unknown name --json", ("panels", "nope", "--json"), untouched=True)
    yield Case("panels", "--panel is not its flag", ("panels", "--panel", "embedded"))


def mcp_cases() -> Iterator[Case]:
    for flag, values in {
        "--transport": ["smoke", ""],
        "--port": ["0", "-1", "abc", "70000"],
        "--model-path": ["nope.gguf", "folder"],
        "--config": ["nope.toml", "nonutf8"],
    }.items():
        for value in values:
            yield Case("mcp", f"{flag} {value!r}", ("mcp", flag, value), folders=("folder",))
    yield from _panel_cases("mcp", ("mcp",))
    yield Case("mcp", "--base-url without --model", ("mcp", "--base-url", "http://127.0.0.1:9/v1"))
    yield Case("mcp", "a stray argument", ("mcp", "extra"))


def schema_cases() -> Iterator[Case]:
    yield Case("schema", "no kind", ("schema",))
    yield Case("schema", "unknown kind", ("schema", "transcript"))
    yield Case("schema", "two kinds", ("schema", "result", "council"))


def serve_cases() -> Iterator[Case]:
    """Refused before the server binds: a case let through would start a server."""
    for flag, values in {
        "--port": ["-1", "65536", "http"],
        "--workers": ["0", "abc"],
        "--runners": ["0", "257", "2.5", "65"],  # 65: more than the 64 workers
        "--queue-bound": ["0", "1e3"],
        "--per-token": ["0"],
        "--max-body": ["10", "2GB"],
        "--log-format": ["xml"],
    }.items():
        for value in values:
            yield Case("serve", f"{flag} {value!r}", ("serve", flag, value))
    yield Case("serve", "public host without tokens", ("serve", "--host", "0.0.0.0"))
    yield Case("serve", "unset webhook secret", ("serve", "--webhook-secret-env", "NO_SUCH_VAR_"))
    yield Case("serve", "--base-url without --model", ("serve", "--base-url", "http://x/v1"))
    yield Case("serve", "--model-path missing", ("serve", "--model-path", "missing.gguf"))
    yield Case("serve", "config missing", ("serve", "--config", "missing.toml"))
    yield from _panel_cases("serve", ("serve",))
    yield Case("serve", "a positional", ("serve", "extra"))
    for flag, values in {
        "--header-timeout": ["0", "nan", "-1"],
        "--body-timeout": ["0", "1e9"],
        "--lease": ["0", "nan", "-1", "1e9"],
    }.items():
        for value in values:
            yield Case("serve", f"{flag} {value!r}", ("serve", flag, value), untouched=True)
    for label, value in {
        "a folder": "folder",
        "a PostgreSQL URL": "postgresql://user@host:5432/db",
        "a URL with a password": "postgres://user:secret@host/db",
        "a sqlite URL": "sqlite:///jobs.sqlite",
        "not SQLite": "nonutf8",
        "empty": "",
    }.items():
        argv = ("serve", "--database", value)
        yield Case("serve", f"--database {label}", argv, folders=("folder",), untouched=True)
    yield Case("serve", "missing API key", ("serve", "--model", "gpt-x"), untouched=True)
    yield Case(
        "serve",
        "missing key of a config endpoint",
        ("serve", "--config", "c.toml"),
        {
            "c.toml": b'[endpoints.e]\nbase_url = "http://127.0.0.1:9/v1"\n'
            b'api_key_env = "NO_SUCH_KEY_VAR_"\n[[judges]]\nrole = "technical"\n'
            b'endpoint = "e"\n[[judges]]\nrole = "risk"\n'
        },
        untouched=True,
    )


def warm_cases() -> Iterator[Case]:
    """Refused before any warm process is asked, started or stopped."""
    yield Case("warm", "no action", ("warm",), untouched=True)
    yield Case("warm", "unknown action", ("warm", "restart"), untouched=True)
    yield Case("warm", "two actions", ("warm", "start", "stop"), untouched=True)
    yield Case("warm", "empty action", ("warm", ""), untouched=True)


def all_cases() -> list[Case]:
    """Every case, grouped by subcommand in ``debate --help`` order."""
    makers = (
        run_cases,
        judge_cases,
        council_cases,
        leaderboard_cases,
        batch_cases,
        merge_cases,
        calibrate_cases,
        decide_cases,
        validity_cases,
        example_cases,
        panels_cases,
        mcp_cases,
        audit_cases,
        report_cases,
        stability_cases,
        agreement_cases,
        schema_cases,
        serve_cases,
        warm_cases,
    )
    return [case for make in makers for case in make()]


def prepared(case: Case) -> set[str]:
    """The paths (relative, POSIX) :func:`prepare` puts in a case's folder."""
    paths = {*_base_files(), *case.files, *case.folders}
    return paths | {p.as_posix() for name in paths for p in Path(name).parents if p.parts}


def prepare(case: Case, folder: Path) -> None:
    """Write the case's files (and the shared ones) into its own folder."""
    for name, data in {**_base_files(), **case.files}.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    for name in case.folders:
        (folder / name).mkdir(exist_ok=True)


def environment(folder: Path) -> dict[str, str]:
    """No API key, the run store inside the case's folder, this checkout first on the path."""
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["DEBATE_STORE"] = str(folder / "store.sqlite")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def classify(code: int | None, err: str) -> str:
    """Which of :data:`KINDS` a finished (or, with ``code`` None, timed-out) case is."""
    if code is None:
        return "hang"
    if "Traceback (most recent call last)" in err or code < 0:
        return "traceback"
    if code == 0:
        return "accepted"
    if len(err.strip().splitlines()) != 1:
        return "multi-line"
    return "clean" if code == 2 else "wrong-exit"


def run_in_subprocess(case: Case, timeout: float) -> tuple[str, str]:
    """Run one case as ``python -m debate``; its kind and the last line of stderr."""
    with tempfile.TemporaryDirectory(prefix="fuzz-") as scratch:
        folder = Path(scratch)
        prepare(case, folder)
        proc = subprocess.Popen(
            [sys.executable, "-m", "debate", *case.argv],
            cwd=folder,
            env=environment(folder),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        try:
            _, err = proc.communicate(timeout=timeout)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            _, err = proc.communicate()
            code = None
    lines = err.strip().splitlines()
    return classify(code, err), lines[-1][:200] if lines else ""


class TimeLimit(BaseException):
    """Raised in the main thread by SIGALRM when an in-process case runs too long.

    A BaseException, like KeyboardInterrupt, so no ``except Exception`` can swallow it.
    """


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Interrupt the block after ``seconds`` (main thread, Unix)."""

    def ring(signum: int, frame: object) -> None:
        raise TimeLimit

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_in_process(case: Case, folder: Path, timeout: float) -> tuple[str, str]:
    """Run one case through ``main()`` in this process; its kind and stderr."""
    from debate._cli.main import main

    prepare(case, folder)
    err = io.StringIO()
    here = Path.cwd()
    saved = os.environ.copy()
    os.environ.clear()
    os.environ.update(environment(folder))
    os.chdir(folder)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            with time_limit(timeout):
                code: int | None = main(list(case.argv))
    except TimeLimit:
        code = None
    except Exception as exc:  # noqa: BLE001 - any exception out of main() is a traceback
        err.write(f"Traceback (most recent call last):\n{type(exc).__name__}: {exc}\n")
        code = 1
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(saved)
    return classify(code, err.getvalue()), err.getvalue()


def tally(results: list[tuple[Case, str, str]]) -> str:
    """A table of counts per subcommand and in total."""
    by_command: dict[str, Counter[str]] = {}
    for case, kind, _ in results:
        by_command.setdefault(case.command, Counter())[kind] += 1
    total: Counter[str] = sum(by_command.values(), Counter())
    head = f"{'command':<12}{'cases':>6}" + "".join(f"{k:>12}" for k in KINDS)
    rows = [head]
    for command, counts in [*by_command.items(), ("total", total)]:
        cells = "".join(f"{counts[k]:>12}" for k in KINDS)
        rows.append(f"{command:<12}{sum(counts.values()):>6}{cells}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Run every case in subprocesses and print the counts; exit 1 unless all are clean."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per case")
    parser.add_argument("--only", help="only cases of this subcommand")
    parser.add_argument("--verbose", action="store_true", help="list every case not clean")
    args = parser.parse_args(argv)
    cases = [c for c in all_cases() if args.only in (None, c.command)]
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        outcomes = list(pool.map(lambda c: run_in_subprocess(c, args.timeout), cases))
    results = [(c, kind, line) for c, (kind, line) in zip(cases, outcomes, strict=True)]
    if args.verbose:
        for case, kind, line in results:
            if kind != "clean":
                print(f"{kind:<11} {case.command:<10} {case.label}: {line}")
    print(tally(results))
    print(f"{len(cases)} cases in {time.perf_counter() - start:.0f}s")
    return 0 if all(kind == "clean" for _, kind, _ in results) else 1


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
