"""Pieces shared by the ``debate`` subcommands: flags, config from flags, progress lines."""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeAlias

from pydantic import ValidationError

from debate.exceptions import ConfigurationError
from debate.judgments import TrackRecords
from debate.panel import TopicProfiles
from debate.records import (
    Cascade,
    RunConfig,
    Thresholds,
    Usage,
    build_config,
    check_seed,
    default_judges,
    load_config,
    validation_message,
)
from debate.runtime import (
    MAX_BUDGET_TOKENS,
    Budget,
    Event,
    EventHandler,
    Planned,
    PriceTable,
    PromptRenderer,
    RateLimiter,
    StepFinished,
    event_record,
    load_preset,
)
from debate.storage import ResponseCache, RunStore, default_store_path

EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_OUTCOME = 3
"""The decision's outcome is one ``--fail-on`` lists (the result was written all the same)."""

FAILABLE_OUTCOMES = ("irreconcilable", "too_close", "insufficient", "escalate")
"""The outcomes without a winner, which ``--fail-on`` can turn into exit code 3."""

Command = Callable[[argparse.Namespace], int]
"""What a subcommand registers with ``set_defaults(func=...)``: parsed flags in, exit code out.

A command raises instead of printing its own errors; :func:`debate._cli.main.dispatch`
turns every failure into one line and an exit code.
"""

Commands: TypeAlias = "argparse._SubParsersAction[Parser]"
"""The subparsers action each command module registers its parser with."""

CONFIG_FLAGS = {
    field: "--" + field.replace("_", "-")
    for field in (
        "model",
        "base_url",
        "api_key_env",
        "templates",
        "topics",
        "topic_type",
        "topic_classifier",
        "timeout",
        "deadline",
        "max_retries",
        "presentation",
        "swap",
        "samples",
        "judges",
        "arguments",
        "rounds",
    )
} | {"deliberation": "--deliberate"}
"""RunConfig fields a flag sets, and the flag: a bad value is reported under the flag's name,
while RunConfig alone decides what a good value is."""


class UsageExit(SystemExit):
    """argparse refused the command line; ``message`` is its one-line reason."""

    def __init__(self, message: str) -> None:
        super().__init__(EXIT_USAGE)
        self.message = message


class Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in one line with exit code 2."""

    def error(self, message: str) -> Any:
        """Exit 2 with a one-line message (``--json`` callers also get it on stdout)."""
        line = f"{message} (see {self.prog} --help)"
        sys.stderr.write(f"error: {line}\n")
        raise UsageExit(line)


def at_least(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type for a count no function below checks (``--limit``, say).

    ``high`` bounds it above: every number a user can type has a range, so a typo such as
    ``--bootstrap 1000000000`` is refused at once instead of running for hours.
    """

    def parse(text: str) -> int:
        value = int(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is below {low}; use {low} or more")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"{value} is above {high}; use {low} to {high}")
        return value

    parse.__name__ = "count"  # argparse names the type in "invalid count value"
    return parse


def probability_between(
    low: float, high: float, *, high_included: bool = False
) -> Callable[[str], float]:
    """An argparse type for a share strictly above ``low`` and below (or at) ``high``."""

    def parse(text: str) -> float:
        value = float(text)
        above = value > low
        below = value <= high if high_included else value < high
        if not (math.isfinite(value) and above and below):
            upper = f"at most {high:g}" if high_included else f"below {high:g}"
            raise argparse.ArgumentTypeError(f"{text} is not a number above {low:g} and {upper}")
        return value

    parse.__name__ = "share"
    return parse


def seed(text: str) -> int:
    """An argparse type for ``--seed``: a whole number in the range every backend takes."""
    try:
        return check_seed(int(text), "seed")
    except ConfigurationError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("seed: ")) from exc


def path_text(text: str) -> str:
    """An argparse type for an output path: an empty one is refused, not read as ``.``.

    ``Path("")`` is the current folder, so ``--out ""`` (an unset shell variable, say)
    would write into wherever the command happens to run.
    """
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path; name the folder or file to write")
    return text


path_text.__name__ = "path"  # argparse names the type in "invalid path value"


def finite(text: str) -> float:
    """An argparse type for a number of seconds or days: ``inf`` and ``nan`` are refused."""
    value = float(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text} is not a finite number; give a number")
    return value


def days(text: str) -> float:
    """An argparse type for ``--since``: a finite number of days, 0 to a century."""
    value = finite(text)
    if not 0 <= value <= MAX_DAYS:
        raise argparse.ArgumentTypeError(f"{text} is out of range; use 0 to {MAX_DAYS} days")
    return value


def usd(text: str) -> float:
    """An argparse type for ``--max-cost``: a positive, finite number of US dollars."""
    value = finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not above 0; give US dollars, e.g. 0.50")
    return value


def outcome_list(text: str) -> frozenset[str]:
    """An argparse type for ``--fail-on``: a comma list of outcomes without a winner."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in FAILABLE_OUTCOMES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"{unknown[0] if unknown else text!r} is not an outcome; give a comma list of "
            f"{', '.join(FAILABLE_OUTCOMES)}"
        )
    return frozenset(names)


def policy_flag(parser: argparse.ArgumentParser) -> None:
    """``--policy``, for the commands whose panel decides live (run, judge)."""
    parser.add_argument(
        "--policy",
        metavar="POLICY.json",
        help="declare only where the policy's guarantee holds (chosen by `debate validity "
        "--target-agreement` on score tables, e.g. from `debate calibrate`); below its "
        "threshold the outcome is escalate, and with tiers the next tier is asked first",
    )


def escalation_of(args: argparse.Namespace) -> dict[str, Any]:
    """The escalation rule ``--policy`` asks for, as the keyword a debate entry point takes."""
    if getattr(args, "policy", None) is None:
        return {}
    from debate.panel import PolicyRule
    from debate.storage import read_policy

    policy = read_policy(args.policy)
    try:
        return {"escalation": PolicyRule(policy)}
    except ValueError as exc:
        raise ConfigurationError(f"--policy {args.policy}: {exc}", field="--policy") from exc


def fail_on_flag(parser: argparse.ArgumentParser) -> None:
    """``--fail-on``, for the commands whose results have a decision (run, judge, batch)."""
    parser.add_argument(
        "--fail-on",
        type=outcome_list,
        default=frozenset(),
        metavar="OUTCOMES",
        help=f"exit {EXIT_OUTCOME} (after writing the result) when the outcome is one of "
        f"these, comma-separated: {', '.join(FAILABLE_OUTCOMES)}",
    )


def outcome_exit(args: argparse.Namespace, outcomes: Iterable[str]) -> int:
    """:data:`EXIT_OUTCOME` when any of ``outcomes`` is one ``--fail-on`` lists, else 0."""
    listed: frozenset[str] = getattr(args, "fail_on", frozenset())
    return EXIT_OUTCOME if any(o in listed for o in outcomes) else EXIT_OK


MAX_DAYS = 36_500
usd.__name__ = "amount"
outcome_list.__name__ = "outcome list"
finite.__name__ = "number"
days.__name__ = "number of days"
seed.__name__ = "seed"


def model_flags(parser: argparse.ArgumentParser, *, debate_panel: bool = True) -> None:
    """Flags that choose models, the panel, call limits and outputs.

    ``debate_panel=False`` leaves out the flags about how judges read a debate (topic
    profiles, reading order, swap): a command without a debate (the council) refuses them
    rather than accepting and ignoring them.
    """
    group = parser.add_argument_group("model")
    group.add_argument(
        "--model",
        help="model for debaters and judges: 'local' (embedded, default), 'scripted' "
        "(offline placeholder) or a model name served at --base-url / by OpenAI",
    )
    group.add_argument(
        "--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1"
    )
    group.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="environment variable holding the key of --base-url's server ('' for a server "
        "without a key); default OPENAI_API_KEY, for OpenAI's API only",
    )
    group.add_argument("--model-path", metavar="FILE.gguf", help="run this GGUF file in-process")
    _panel_flags(parser, debate_panel)
    calls = parser.add_argument_group("calls")
    calls.add_argument("--timeout", type=finite, metavar="S", help="per-call timeout in seconds")
    calls.add_argument(
        "--deadline",
        type=finite,
        metavar="S",
        help="wall-clock budget of a debate or council (of each item in batch and calibrate)",
    )
    calls.add_argument("--max-retries", type=int, metavar="N", help="re-asks after invalid output")
    calls.add_argument(
        "--cache",
        metavar="PATH",
        help="response cache (SQLite; default OUT/cache.sqlite): re-running resumes",
    )
    calls.add_argument("--no-cache", action="store_true", help="do not read or write a cache")
    cost_flags(parser)
    out = parser.add_argument_group("output")
    out.add_argument(
        "--out", type=path_text, default="debate-out", metavar="DIR", help="where result.json goes"
    )
    out.add_argument("--json", action="store_true", help="print the result JSON on stdout")
    out.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    store_flags(out)


def cost_flags(parser: argparse.ArgumentParser) -> None:
    """``--prices``, ``--max-cost``, ``--max-tokens``, ``--rpm`` and ``--tpm``.

    Every command that calls models has them; with ``batch`` (and ``calibrate``) the caps and
    limits are over all items together.
    """
    group = parser.add_argument_group("cost and limits")
    group.add_argument(
        "--prices",
        metavar="FILE",
        help="price table TOML, USD per 1M tokens (default: the shipped table of well-known "
        "models; a model missing from the table is reported as not priced)",
    )
    group.add_argument(
        "--max-cost",
        type=usd,
        metavar="USD",
        help="no call starts once its worst case could take the spend of the run (batch, "
        "calibration: all items) past this many US dollars",
    )
    group.add_argument(
        "--max-tokens",
        type=at_least(1, MAX_BUDGET_TOKENS),
        metavar="N",
        help="the same for prompt + completion tokens (not the per-call max_tokens)",
    )
    group.add_argument(
        "--rpm", type=int, metavar="R", help="requests per minute, all calls (default: no limit)"
    )
    group.add_argument(
        "--tpm", type=int, metavar="T", help="tokens per minute, all calls (default: no limit)"
    )


def prices(args: argparse.Namespace) -> PriceTable | None:
    """``--prices``; a bad file is bad input before any work.

    None without the flag: the run then prices with the shipped table, joined with its
    endpoints' own tables (which win over the shipped one, not over a table given here).
    """
    if not args.prices:
        return None
    with user_file(args.prices, "price table"):
        return PriceTable.load(args.prices)


def budget(args: argparse.Namespace) -> Budget | None:
    """``--max-cost`` and ``--max-tokens`` as one budget for the command; None without them."""
    if args.max_cost is None and args.max_tokens is None:
        return None
    return Budget(max_cost_usd=args.max_cost, max_tokens=args.max_tokens)


def limiter(args: argparse.Namespace) -> RateLimiter | None:
    """``--rpm``/``--tpm`` as one limiter shared by every call of the command.

    ``--rpm 0`` is refused by the limiter: leaving the flag out is how to ask for no limit.
    """
    if args.rpm is None and args.tpm is None:
        return None
    return RateLimiter(args.rpm, args.tpm)


def cost_and_limits(args: argparse.Namespace) -> dict[str, Any]:
    """``prices``, ``budget`` and ``limiter`` from the flags, read before any work."""
    return {
        "prices": prices(args),
        "budget": budget(args),
        "limiter": limiter(args),
    }


def budget_lines(usage: Usage) -> list[str]:
    """What the budget stopped, one line per call not made (none without a budget)."""
    if usage.budget is None:
        return []
    b = usage.budget
    caps = [f"${b.max_cost_usd:g}" if b.max_cost_usd is not None else None]
    caps.append(f"{b.max_tokens} tokens" if b.max_tokens is not None else None)
    head = (
        f"Budget: {' and '.join(c for c in caps if c)}; spent ${b.spent_usd:.4f}, "
        f"{b.spent_tokens} tokens; {len(usage.skipped)} calls not made"
    )
    return [head] + [
        f"  - not made: {s.phase} {s.actor} ({s.model}): {s.reason}" for s in usage.skipped
    ]


def cascade_lines(cascade: Cascade | None, tier: int) -> list[str]:
    """Which tier decided and why each tier stopped or went on (none without tiers)."""
    if cascade is None or len(cascade.steps) < 2:
        return []
    cost = "" if cascade.cost_usd is None else f", ${cascade.cost_usd:.4f}"
    head = (
        f"Cascade: decided by tier {tier} of {len(cascade.steps)}; {cascade.calls} judge calls"
        f"{cost} (asking every tier: {cascade.calls_all_tiers} calls)"
    )
    steps = [f"  - tier {s.tier} ({', '.join(s.judges)}): {s.reason}" for s in cascade.steps]
    return [head, *steps]


def _panel_flags(parser: argparse.ArgumentParser, debate_panel: bool) -> None:
    panel = parser.add_argument_group("panel")
    config_flags(panel)
    panel.add_argument(
        "--judges", metavar="LIST", help="comma-separated roles, e.g. technical,risk"
    )
    panel.add_argument(
        "--templates", metavar="DIR", help="folder of templates overriding the shipped ones"
    )
    panel.add_argument(
        "--seed", type=seed, help="sampling seed, 0 to 2**32-1 (recorded in the result)"
    )
    if debate_panel:
        _reading_flags(panel)
        decision_flags(panel)


def config_flags(group: argparse._ArgumentGroup) -> None:
    """``--config FILE`` and ``--panel NAME``: the panel from a file or a shipped preset."""
    group.add_argument("--config", metavar="FILE", help="panel config TOML")
    group.add_argument(
        "--panel",
        metavar="NAME",
        help="a shipped panel preset as the config, e.g. cross-family (debate panels lists "
        "them); not with --config",
    )


def panel_config(
    args: argparse.Namespace, given: dict[str, Any], flags: dict[str, str]
) -> RunConfig:
    """``--config`` or ``--panel`` (never both), with the flags' values ``given`` on top.

    Both at once is refused rather than merged: which of the two would win for a judge
    both name is a rule nobody should have to remember. Editing a preset is saving it
    (``debate panels NAME``) and passing the file as ``--config``.
    """
    panel = getattr(args, "panel", None)
    if panel is None:
        return load_config(args.config, given, flags=flags)
    if args.config is not None:
        raise ConfigurationError(
            f"--panel: give --panel {panel} or --config {args.config}, not both; to change "
            f"the preset, save it (debate panels {panel} > panel.toml), edit it and pass "
            "--config panel.toml",
            field="--panel",
        )
    return load_preset(panel, given, flags=flags, flag="--panel")


DECISION_FLAGS = {"aggregate": "--aggregate", "min_judges": "--min-judges"}
"""``[thresholds]`` fields a flag sets, and the flag."""


def decision_flags(group: argparse._ArgumentGroup | argparse.ArgumentParser) -> None:
    """``--aggregate`` and ``--min-judges``: how the judges' margins combine, and how many."""
    group.add_argument(
        "--aggregate",
        choices=["weighted_mean", "median", "trimmed_mean", "majority"],
        help="how the judges' margins combine (default weighted_mean; [thresholds] aggregate)",
    )
    group.add_argument(
        "--min-judges",
        type=int,
        metavar="N",
        help="fewest scored judges a decision rests on (default 2; [thresholds] min_judges)",
    )


def decision_thresholds(thresholds: Thresholds, args: argparse.Namespace) -> Thresholds:
    """``thresholds`` with ``--aggregate``/``--min-judges`` on top, checked by Thresholds."""
    given = {f: getattr(args, f, None) for f in DECISION_FLAGS}
    given = {f: v for f, v in given.items() if v is not None}
    if not given:
        return thresholds
    try:
        return Thresholds.model_validate({**thresholds.model_dump(), **given})
    except ValidationError as exc:
        raise ConfigurationError(
            validation_message(exc, "thresholds", DECISION_FLAGS, Thresholds)
        ) from exc


def with_decision_flags(config: RunConfig, args: argparse.Namespace) -> RunConfig:
    """The config with the decision flags applied to its thresholds (the panel re-checked)."""
    thresholds = decision_thresholds(config.thresholds, args)
    if thresholds is config.thresholds:
        return config
    regular = sum(1 for j in config.judges if not j.standby)
    if getattr(args, "min_judges", None) is not None and args.min_judges > regular:
        raise ConfigurationError(
            f"--min-judges: {args.min_judges} is more than the panel's {regular} regular "
            "judges; lower it or add judges"
        )
    data = config.model_dump()
    data["thresholds"] = thresholds.model_dump()
    return build_config(data, "config")


def _reading_flags(panel: argparse._ArgumentGroup) -> None:
    """How the judges read a debate: its topic type and the order and sides they read."""
    panel.add_argument(
        "--topics", metavar="FILE", help="topic profile TOML replacing the shipped one"
    )
    panel.add_argument("--topic-type", help="set the topic type instead of detecting it")
    panel.add_argument(
        "--topic-classifier",
        choices=["keywords", "model"],
        help="detect the topic type from keywords (default) or with one call to a judge's model",
    )
    panel.add_argument(
        "--presentation",
        choices=["counterbalanced", "fixed"],
        help="per-judge reading order (default counterbalanced)",
    )
    panel.add_argument("--swap", action="store_true", help="every judge reads twice, sides swapped")
    panel.add_argument(
        "--samples",
        type=int,
        metavar="K",
        help="readings per judge, each in another order with another seed (default 1)",
    )


def deliberate_flag(parser: argparse.ArgumentParser) -> None:
    """``--deliberate``: judges see each other's reasoning on split arguments, revise once.

    On ``run`` and ``judge`` (one debate, whose result shows the movement); a config's
    ``[deliberation] rounds = 1`` does the same anywhere a config is read.
    """
    parser.add_argument(
        "--deliberate",
        dest="deliberation",
        action="store_true",
        help="after scoring, each judge sees the others' scores and notes on the arguments "
        "the panel split on and may revise once ([deliberation] rounds = 1)",
    )


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


def overrides(args: argparse.Namespace) -> dict[str, Any]:
    """Config values set by flags (None where a flag was not given); RunConfig checks them."""
    values: dict[str, Any] = {
        field: getattr(args, field, None) for field in CONFIG_FLAGS if field != "judges"
    }
    values["swap"] = values["swap"] or None  # an absent --swap keeps the config's
    # --deliberate is one round; an absent flag keeps the config's [deliberation]
    values["deliberation"] = {"rounds": 1} if values["deliberation"] else None
    if args.judges is not None:
        roles = [r.strip() for r in args.judges.split(",") if r.strip()]
        values["judges"] = [j.model_dump() for j in default_judges(roles)]
    if args.model is None and args.base_url is not None:
        raise ConfigurationError("--model: name the model served at --base-url")
    _check_model_path(args)
    return values


def _check_model_path(args: argparse.Namespace) -> None:
    """``--model-path`` names a file and is not paired with a server that would ignore it."""
    if args.model_path is None:
        return
    if args.base_url is not None:
        raise ConfigurationError(
            "--model-path: runs a GGUF file in-process, so --base-url would ignore it; "
            "give one of the two"
        )
    if not Path(args.model_path).is_file():
        raise ConfigurationError(
            f"--model-path: {args.model_path} is not a file; give the path of a .gguf model"
        )


def run_config(args: argparse.Namespace) -> RunConfig:
    """The run's config: ``--config`` or ``--panel`` (if given) with the flags on top.

    The files it names are read now too (every template compiled, the topic profile
    parsed), so a broken one is bad input before any call rather than a failure found
    after some calls were paid for, or a failed line for every item of a batch.
    """
    config = panel_config(args, overrides(args), CONFIG_FLAGS)
    config = with_decision_flags(config, args)
    PromptRenderer(config.templates)
    if config.topics is not None:
        TopicProfiles.load(config.topics)
    return config


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
    try:
        if path.is_dir():
            raise IsADirectoryError(21, "it is a folder", str(path))
        cache = ResponseCache(path)
    except (OSError, sqlite3.Error) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigurationError(
            f"{flag}: cannot open the response cache {path} ({reason}); "
            f"give a file path (SQLite) or use --no-cache"
        ) from exc
    OPENED_CACHES.append(cache)
    return cache


@contextmanager
def user_file(path: str | Path, what: str, *, writing: bool = False) -> Iterator[None]:
    """Around the read (or ``writing``, the write) of a file the user named: bad input (exit 2).

    The message says which of the two failed: a write refused as "cannot read it" sent the
    user looking at the wrong file.
    """
    try:
        yield
    except IsADirectoryError as exc:
        if not writing:
            raise ConfigurationError(
                f"{what} {path}: cannot read it ({exc.strerror or exc}); check the path"
            ) from exc
        raise ConfigurationError(
            f"{what} {path}: cannot write it (it is a folder); give the path of a file"
        ) from exc
    except OSError as exc:
        action = "write" if writing else "read"
        raise ConfigurationError(
            f"{what} {path}: cannot {action} it ({exc.strerror or exc}); check the path"
        ) from exc
    except UnicodeDecodeError as exc:
        raise ConfigurationError(
            f"{what} {path}: not UTF-8 text (byte {exc.start}: {exc.reason}); save it as UTF-8"
        ) from exc


class ProgressPrinter:
    """Progress lines on stderr: the plan first, then one line per finished step.

    The plan line comes before any model is loaded or called, so a run on a slow machine
    says at once what it is about to do; each step's line then counts the steps done of the
    plan and gives a running estimate of the time left (the mean time per step so far).
    """

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.total: int | None = None
        self.done = 0

    def __call__(self, event: Event) -> None:
        """Print the plan, or a line for a finished step."""
        if isinstance(event, Planned):
            self.total = event.total
            items = f" over {event.items} items" if event.items is not None else ""
            self._write(f"plan: {event.total} model calls{items}; a line as each one finishes")
            return
        if not isinstance(event, StepFinished):
            return
        self.done += 1
        total = time.perf_counter() - self.start
        busy = event.model_seconds or event.elapsed
        rate = event.completion_tokens / busy if busy > 0 else 0.0
        step = event.phase.replace("_", " ")
        if event.round is not None:
            step += f" {event.round}"
        status = "ok" if event.ok else f"FAILED ({event.detail})"
        retry = f", {event.attempts} attempts" if event.attempts > 1 else ""
        self._write(
            f"[{total:7.1f}s]{self._count(total)} {step:<20} {event.actor:<12} {status}  "
            f"{event.elapsed:5.1f}s  {event.completion_tokens} tok  {rate:5.1f} tok/s{retry}"
        )

    def _count(self, elapsed: float) -> str:
        """`` k/n, ~Ns left`` once there is a plan; nothing without one."""
        if self.total is None:
            return ""
        left = max(self.total - self.done, 0)
        eta = f", ~{elapsed / self.done * left:.0f}s left" if left else ""
        return f" {self.done}/{self.total}{eta}"

    @staticmethod
    def _write(line: str) -> None:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


class JsonlProgress:
    """``--progress jsonl``: every event as one JSON object per line on stderr.

    Each line has ``type`` (plan, start, retry, finish, item_finish) and ``ts``, then the
    event's fields (a call's ``phase`` and ``actor`` among them); see
    :mod:`debate.runtime._events`. stdout is left to the result.
    """

    def __call__(self, event: Event) -> None:
        """Write the event's line."""
        sys.stderr.write(json.dumps(event_record(event)) + "\n")
        sys.stderr.flush()


def progress_flag(parser: argparse.ArgumentParser) -> None:
    """``--progress text|jsonl``, for the commands that report progress."""
    parser.add_argument(
        "--progress",
        choices=["text", "jsonl"],
        default="text",
        help="progress on stderr as lines for people (text, default) or as JSON events "
        "(jsonl: plan, start, retry, finish); --quiet silences both",
    )


def progress(args: argparse.Namespace) -> EventHandler | None:
    """The progress handler ``--progress`` chose, or None with ``--quiet``."""
    if args.quiet:
        return None
    return JsonlProgress() if getattr(args, "progress", "text") == "jsonl" else ProgressPrinter()


def announce(
    handler: EventHandler | None, command: str, total: int, items: int | None = None
) -> None:
    """Send the plan (how many calls the command will make) before the first call."""
    if handler is not None:
        handler(Planned(command=command, total=total, items=items))
