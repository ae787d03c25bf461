"""Run configuration: the panel, the debate shape, thresholds; loaded from TOML or built in code.

Defaults live in data files (``debate/data/roles.toml``, ``debate/data/topics.toml``) rather
than in code, so a user can replace them without editing the package.
"""

from __future__ import annotations

import copy
import functools
import sys
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from debate._checks import repeated
from debate.exceptions import ConfigurationError
from debate.records._input import parse_toml
from debate.records._preset_header import split_header
from debate.records._transcript import DIMENSIONS, Frozen
from debate.stats import RUBRIC_WEIGHTS, Aggregate, check_weights

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


MAX_CONCURRENCY = 1024
"""Items or calls at once (``--concurrency``): far beyond any provider's limits already."""


MAX_TIER = 9
"""The highest cascade tier: more tiers than that is a typo, not a plan (each is a round of
calls one after the other)."""

MAX_SAMPLES = 16
"""The most readings per judge (``samples``): each is a paid call, and past a dozen the
consistency estimate moves little."""

MAX_PER_MINUTE = 10**9
"""The largest ``rpm`` or ``tpm``: a limit is a positive number; no limit is no setting (a 0
that silently meant "no limit" hid a typo)."""

DEFAULT_ENDPOINT = "default"
"""The endpoint set by ``base_url`` and ``api_key_env`` (``--base-url``/``--api-key-env``)."""


def read_toml(path: str | Path, what: str) -> dict[str, Any]:
    """Read a TOML file, turning every failure into a one-line ConfigurationError."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(
            f"{what} {path}: cannot read it ({exc.strerror}); check the path"
        ) from exc
    except UnicodeDecodeError as exc:
        raise ConfigurationError(
            f"{what} {path}: not UTF-8 text (byte {exc.start}: {exc.reason}); save it as UTF-8"
        ) from exc
    try:
        return parse_toml(text, f"{what} {path}")
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"{what} {path}: not valid TOML ({exc}); fix the syntax") from exc


def data_toml(name: str) -> dict[str, Any]:
    """A TOML file shipped in ``debate/data`` (a fresh copy: the caller may change it)."""
    return copy.deepcopy(_shipped_toml(name))


@functools.cache
def _shipped_toml(name: str) -> dict[str, Any]:
    """The file as shipped, read once per process.

    A service builds a config per submitted job; reading and parsing the file each time
    was a tenth of a submit's CPU.
    """
    text = resources.files("debate.data").joinpath(name).read_text(encoding="utf-8")
    return tomllib.loads(text)


def default_role_weights() -> dict[str, dict[str, float]]:
    """Rubric weights of the built-in roles (technical, business, risk, general)."""
    return {role: dict(weights) for role, weights in data_toml("roles.toml").items()}


class Finite(Frozen):
    """Base of the config records: ``inf`` and ``nan`` are refused wherever a number goes.

    A non-finite number is never what a user meant, and JSON cannot carry it: ``timeout =
    inf`` would be written to result.json as ``null``, which no reader then accepts.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


def check_key_env(value: str) -> str:
    """A key variable's name as given (``""``: no key); a key pasted in its place is refused.

    The message never repeats the value: what was typed may be the key itself.
    """
    if value != value.strip() or any(c in value for c in "= -/:"):
        raise ValueError(
            "not an environment variable name; give the variable's name (e.g. "
            'OPENAI_API_KEY), never the key itself, or "" for a server without a key'
        )
    return value


class Endpoint(Finite):
    """An OpenAI-compatible endpoint, named once under ``[endpoints.<name>]``.

    Debaters (``pro_endpoint``/``con_endpoint``) and judges (``endpoint``) refer to it by
    name. Its key is read from ``api_key_env`` and sent to this endpoint only: the key
    variable is never implied, so no key reaches a host it was not configured for.
    """

    base_url: str | None = None
    """The server, e.g. ``http://127.0.0.1:8000/v1``; ``None`` is OpenAI's API."""
    api_key_env: str
    """Environment variable holding this endpoint's key; ``""`` for a server without a key
    (then no key is sent at all)."""
    rpm: int | None = Field(default=None, ge=1, le=MAX_PER_MINUTE)
    """Requests per minute, shared by every model on this endpoint (a batch's items too)."""
    tpm: int | None = Field(default=None, ge=1, le=MAX_PER_MINUTE)
    """Tokens per minute, shared like ``rpm``."""
    prices: str | dict[str, dict[str, float]] | None = None
    """Prices of this endpoint's models: the path of a price table TOML, or the table inline
    (``{"gpt-4o-mini" = {prompt = 0.15, completion = 0.6}}``, USD per million tokens). They
    join the run's table (``--prices``); a model two tables price differently is refused."""

    @field_validator("api_key_env")
    @classmethod
    def _key_env(cls, value: str) -> str:
        return check_key_env(value)


class JudgeSpec(Finite):
    """One judge of the panel."""

    name: str = Field(min_length=1)
    """Unique name within the panel (defaults to the role)."""
    role: str = Field(min_length=1)
    """Role: selects the prompt section ``judge_role_<role>.md.jinja`` and the domain weight."""
    weights: dict[str, float]
    """Rubric weights over logic, evidence, responsiveness, honesty; non-negative, sum 1."""
    model: str | None = None
    """Model for this judge; ``None`` uses the run's model."""
    endpoint: str | None = None
    """Name of the endpoint (``[endpoints.<name>]``) serving this judge; ``None`` is the
    run's ``default`` endpoint (``base_url``/``api_key_env``)."""
    tier: int = Field(default=1, ge=1, le=MAX_TIER, strict=True)
    """Cascade tier, 1 the cheapest: tier 1 decides alone, and a judge of tier ``k`` is
    asked only when tiers 1 to ``k - 1`` together were not confident enough (see
    :mod:`debate.panel._cascade`). Strict, so ``2.0``, ``"2"`` or ``true`` are refused
    rather than read as a tier nobody wrote."""
    standby: bool = Field(default=False, strict=True)
    """A standby is not asked with the panel: it is asked only when a regular judge ends
    unscored, and then takes that judge's place (recorded in its evaluation's
    ``standby_for``). Standbys replace judges in panel order, one each."""
    samples: int | None = Field(default=None, ge=1, le=MAX_SAMPLES, strict=True)
    """Readings of this judge (overrides the run's ``samples``); ``None`` takes the run's."""

    @model_validator(mode="before")
    @classmethod
    def _no_base_url(cls, data: Any) -> Any:
        """A judge's own ``base_url`` is refused: it would carry the run's key to its host.

        ``base_url: null`` (what results written before endpoints hold) is dropped, so those
        results still load.
        """
        if isinstance(data, dict) and "base_url" in data:
            if data["base_url"] is not None:
                raise ValueError(
                    "a judge's base_url is not taken (it would receive the run's key); "
                    "declare [endpoints.NAME] with base_url and api_key_env, and set "
                    "endpoint = NAME on the judge"
                )
            data = {k: v for k, v in data.items() if k != "base_url"}
        return data

    @field_validator("weights")
    @classmethod
    def _weights(cls, value: dict[str, float]) -> dict[str, float]:
        return check_weights(value, DIMENSIONS)


def tier_problem(tiers: Sequence[int], member: str = "judge") -> str | None:
    """What is wrong with a panel's tiers (one per ``member``: judge or reviewer), or None.

    Tiers run 1, 2, 3 ... without a gap: a tier nobody is in (tiers 1 and 3 only) is more
    likely a typo than a plan, and a per-tier setting (a threshold) would not know which
    tier it meant, so it is refused rather than renumbered. Tier 1 decides alone, so it
    needs the two judges any decision needs (only when there are tiers: a panel without
    them is checked as a whole).
    """
    present = sorted(set(tiers))
    if present == [1] or not present:
        return None
    missing = [t for t in range(1, present[-1] + 1) if t not in present]
    if missing:
        return (
            f"tier {missing[0]} has no {member}, yet tier {present[-1]} has; number the tiers "
            f"1, 2, 3 ... without a gap (here: {', '.join(map(str, present))})"
        )
    first = sum(1 for t in tiers if t == 1)
    if first < 2:
        return (
            f"tier 1 has {first} {member}; it decides alone and a decision needs two, so "
            f"put a second {member} in tier 1"
        )
    return None


class Thresholds(Finite):
    """Decision thresholds; echoed in every decision so that a result can be reproduced."""

    alpha: float = Field(default=0.50, ge=-1.0, le=1.0)
    """Below this Krippendorff's alpha (and below ``kappa``), the panel is irreconcilable.
    An agreement statistic is at most 1, so a threshold above 1 could never be met; -1 or
    below turns the gate off, so -1 is the lowest."""
    kappa: float = Field(default=0.40, ge=-1.0, le=1.0)
    variance: float = Field(default=3.0, gt=0)
    """Per-argument variance across judges (offset-corrected scores, 1-10 scale) at or above
    which the panel is irreconcilable on that argument. Positive: at 0 every argument, even
    one the judges scored alike, would be irreconcilable."""
    gap: float = Field(default=0.05, ge=0)
    """A weighted PRO-CON margin smaller than this is too close to call (0: none is). A
    negative gap would be no gap at all, so it is refused as the typo it is."""
    split_share: float = Field(default=0.25, gt=0, le=0.5)
    """Pairwise verdicts: the panel is split (irreconcilable) when the side with less
    support holds at least this share of the weight given to A or B. At 0.25 one judge in
    four (two in eight) saying the opposite of the rest is disagreement to report, not noise
    to outvote; 0.5 splits only an exact tie of weight, a small share splits at any dissent.
    Above 0.5 the smaller side could never reach it, so the range is (0, 0.5]."""
    confidence: float = Field(default=0.95, gt=0.5, lt=1.0)
    """Level of the margin's interval; a winner needs the interval to exclude 0."""
    min_spread: float | None = Field(default=3.0, ge=0)
    """Floor, in points of the 1-10 scale, on each judge's spread before calibration, so that
    a small uniform gap is not stretched to the whole scale: min-max divides by
    ``max(range, min_spread)``, z-score by ``max(sd, min_spread / 2)``. Three points is where
    a gap stops being a nuance on the rubric: a judge who separates the arguments by less is
    read as seeing that much, not the whole scale, while a judge using 3 points or more is
    calibrated exactly as before. ``0`` or ``None`` turns the floor off."""
    min_judges: int = Field(default=2, ge=2, le=64, strict=True)
    """Fewest scored judges a decision rests on (else ``insufficient``). Two is the least
    any agreement statistic needs; more asks for more independent looks before a winner."""
    aggregate: Aggregate = "weighted_mean"
    """How the judges' PRO-CON margins become the panel's: ``weighted_mean`` (the default),
    ``median``, ``trimmed_mean`` or ``majority`` (see :mod:`debate.stats._aggregate`)."""


class CouncilSettings(Finite):
    """Council mode: how candidates are scored and ranked."""

    method: Literal["normalized", "borda", "rubric"] = "normalized"
    """Primary ranking: z-normalised score averaging, Borda count, or raw rubric means."""
    weights: dict[str, float] = Field(default_factory=lambda: dict(RUBRIC_WEIGHTS))
    """Rubric weights over accuracy, relevance, completeness, conciseness, clarity (sum 1)."""
    safety_gate: bool = False
    """Ask reviewers to flag unsafe answers; a majority flag caps the answer's score."""
    safety_cap: float = Field(default=0.0, ge=0, le=10)
    tie_z: float = Field(default=1.96, gt=0)
    """Adjacent candidates whose ``tie_z`` x SE intervals overlap are flagged as tied."""

    @field_validator("weights")
    @classmethod
    def _weights(cls, value: dict[str, float]) -> dict[str, float]:
        return check_weights(value, tuple(RUBRIC_WEIGHTS))


MAX_DELIBERATION_ROUNDS = 1
"""Judges may revise once (issue 29): a second round would mostly measure how fast a panel
converges on itself, which the herding figure already warns about."""


class Deliberation(Finite):
    """Deliberation: judges see each other's reasoning on split arguments, revise once.

    After the first scoring, each scored judge sees the others' scores, standings and notes
    on the arguments the panel split on, and may revise each once.
    """

    rounds: int = Field(default=0, ge=0, le=MAX_DELIBERATION_ROUNDS, strict=True)
    """0 (default): judges never see each other's reasoning; 1: one deliberation call per
    scored judge when some argument is split (``--deliberate``)."""


class RunConfig(Finite):
    """Everything that shapes a run; stored in the result so a run can be reproduced."""

    arguments: int = Field(default=3, ge=1, le=10)
    """Arguments per side."""
    rounds: int = Field(default=1, ge=0, le=5)
    """Cross-examination rounds."""
    judges: list[JudgeSpec] = Field(default_factory=lambda: default_judges())
    thresholds: Thresholds = Field(default_factory=Thresholds)
    calibration: Literal["auto", "minmax", "zscore"] = "auto"
    """``auto``: min-max for up to 3 arguments per side, z-score above."""
    topic_type: str | None = None
    """Set the topic type by hand instead of detecting it from keywords."""
    topic_classifier: Literal["keywords", "model"] = "keywords"
    """How the topic type is detected when not set by hand: keyword table (default), or one
    small structured call to the first judge's model (keywords if that call fails)."""
    model: str = "local"
    """Default model of debaters and judges: ``local`` (embedded), ``scripted`` (offline
    demo double) or a model name served at their endpoint."""
    base_url: str | None = None
    """Server of the ``default`` endpoint (``--base-url``); ``None`` is OpenAI's API (or the
    embedded model / test double, for the names ``local`` and ``scripted``)."""
    api_key_env: str | None = None
    """Key variable of the ``default`` endpoint (``--api-key-env``); ``""`` for a server
    without a key. ``None`` reads ``OPENAI_API_KEY`` for OpenAI's API and is refused with a
    ``base_url``: OpenAI's key goes to another host only when named."""
    endpoints: dict[str, Endpoint] = Field(default_factory=dict)
    """Named endpoints (``[endpoints.<name>]``) that debaters and judges refer to."""
    pro_model: str | None = None
    con_model: str | None = None
    pro_endpoint: str | None = None
    """Endpoint of the PRO debater; ``None`` is the ``default`` endpoint."""
    con_endpoint: str | None = None
    """Endpoint of the CON debater; ``None`` is the ``default`` endpoint."""
    temperature: float = Field(default=0.2, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=16, le=131_072)
    """Per-call cap on generated tokens. None (default): each call's own bound, derived from
    its reply schema so that any reply within the schema's lengths fits (see
    :func:`debate.models._schema.reply_max_tokens`). A number caps every call instead; a
    reply cut off by it is asked again with twice the cap."""
    max_retries: int = Field(default=2, ge=0, le=10)
    """Re-asks after invalid output, per call."""
    timeout: float = Field(default=120.0, gt=0, le=86_400)
    """Per-call timeout in seconds (at most a day)."""
    provider_retries: int = Field(default=3, ge=0, le=10)
    """Retries after a provider fault (429, 5xx, timeout, connection), per call."""
    backoff: float = Field(default=0.5, ge=0, le=600)
    """First retry delay in seconds; doubles each retry, with jitter; Retry-After wins."""
    deadline: float | None = Field(default=None, gt=0, le=604_800)
    """Wall-clock budget of one debate in seconds (at most a week); judges still running
    then are unscored."""
    council: CouncilSettings = Field(default_factory=CouncilSettings)
    presentation: Literal["counterbalanced", "fixed"] = "counterbalanced"
    """Per-judge reading order: counterbalanced across the panel, or PRO first for all."""
    swap: bool = False
    """Swap check: every judge reads the debate twice, sides in opposite order."""
    samples: int = Field(default=1, ge=1, le=MAX_SAMPLES, strict=True)
    """Readings per judge: each in another presentation order with another seed; the
    judge's consistency across them feeds its weight and the margin's interval (see
    :mod:`debate.panel._samples`)."""
    templates: str | None = None
    """Folder of templates overriding the shipped ones (same file names)."""
    topics: str | None = None
    """Topic profile TOML replacing ``debate/data/topics.toml``."""
    deliberation: Deliberation = Field(
        default_factory=Deliberation, exclude_if=lambda d: d.rounds == 0
    )
    """Judges' deliberation after the first scoring (absent from the JSON when off, so a run
    without it records the same config as before the setting existed)."""

    @field_validator("judges")
    @classmethod
    def _judges(cls, value: list[JudgeSpec]) -> list[JudgeSpec]:
        regular = [j for j in value if not j.standby]
        if len(regular) < 2:
            raise ValueError(
                f"the panel has {len(regular)} regular judge(s); a panel needs at least two "
                "judges that are not standbys"
            )
        names = [j.name for j in value]
        dupes = repeated(names)
        if dupes:
            raise ValueError(f"judge names must be unique; {', '.join(dupes)} repeats")
        problem = tier_problem([j.tier for j in regular])
        if problem is not None:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _enough_judges(self) -> RunConfig:
        """A panel of fewer regular judges than ``min_judges`` could never decide."""
        regular = sum(1 for j in self.judges if not j.standby)
        need = self.thresholds.min_judges
        if regular < need:
            raise ValueError(
                f"thresholds.min_judges is {need} but the panel has {regular} regular "
                f"judge(s); lower min_judges or add judges"
            )
        return self

    @model_validator(mode="after")
    def _deliberation_on_one_reading(self) -> RunConfig:
        """Deliberation is refused with a second reading (the swap check, samples), for now.

        Deliberation revises one reading; with the swap check or repeated readings the vote
        averages every reading, so the revision would be outvoted by readings nobody revised
        (with samples, silently ignored).
        """
        if not self.deliberation.rounds:
            return self
        if self.swap:
            raise ValueError(
                "deliberation.rounds: deliberation is not combined with swap yet; "
                "drop --swap or --deliberate (deliberation.rounds = 0)"
            )
        many = [(j.name, samples_of(j, self.samples)) for j in self.judges]
        many = [(name, k) for name, k in many if k > 1]
        if many:
            name, k = many[0]
            raise ValueError(
                f"deliberation.rounds: deliberation is not combined with repeated readings "
                f"yet (judge {name} reads {k} times); drop --samples (samples = 1) or "
                "--deliberate"
            )
        return self

    @field_validator("api_key_env")
    @classmethod
    def _key_env(cls, value: str | None) -> str | None:
        return None if value is None else check_key_env(value)

    @field_validator("endpoints")
    @classmethod
    def _endpoints(cls, value: dict[str, Endpoint]) -> dict[str, Endpoint]:
        if DEFAULT_ENDPOINT in value:
            raise ValueError(
                f"{DEFAULT_ENDPOINT!r} names the endpoint of base_url and api_key_env "
                f"(--base-url/--api-key-env); rename [endpoints.{DEFAULT_ENDPOINT}]"
            )
        return value

    @model_validator(mode="after")
    def _known_endpoints(self) -> RunConfig:
        """Every endpoint a debater or judge names is declared (checked at load)."""
        known = [*self.endpoints, DEFAULT_ENDPOINT]
        used = [("pro_endpoint", self.pro_endpoint), ("con_endpoint", self.con_endpoint)]
        used += [(f"judges.{i}.endpoint", j.endpoint) for i, j in enumerate(self.judges)]
        for field, name in used:
            if name is not None and name not in known:
                raise ValueError(
                    f"{field}: unknown endpoint {name!r}; declare [endpoints.{name}] with "
                    f"base_url and api_key_env, or use one of {', '.join(known)}"
                )
        return self


def default_judges(roles: list[str] | None = None) -> list[JudgeSpec]:
    """Judges for the given built-in roles (all four by default)."""
    table = default_role_weights()
    chosen = roles if roles is not None else list(table)
    judges = []
    for role in chosen:
        if role not in table:
            raise ConfigurationError(
                f"--judges: unknown judge role {role!r}; choose from {', '.join(table)} "
                "or define the role in a panel config with its weights and template"
            )
        judges.append(JudgeSpec(name=role, role=role, weights=table[role]))
    return judges


def validation_message(
    exc: ValidationError,
    source: str,
    names: Mapping[str, str] | None = None,
    bounds: type[BaseModel] | None = None,
) -> str:
    """Turn a pydantic error into one line that names the field and the problem.

    Args:
        exc: The validation error (its first problem is reported, the rest counted).
        source: Where the data came from (a file, ``config``); prefixes the field's path.
        names: Top-level fields set elsewhere (by a command-line flag, say), and the name to
            report them under instead of ``source.field``.
        bounds: The model whose fields' ``ge``/``le`` bounds are quoted as "use 1 to 10"
            when a value is out of range, so the range is stated once, on the field.
    """
    first = exc.errors()[0]
    loc = [str(p) for p in first["loc"]]
    message = first["msg"].removeprefix("Value error, ")
    limits = _bounds(bounds, loc) if bounds is not None else None
    if limits is not None and first["type"] in ("greater_than_equal", "less_than_equal"):
        message = f"{first['input']} is out of range; use {limits[0]} to {limits[1]}"
    more = len(exc.errors()) - 1
    suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    if names and loc and loc[0] in names:
        return f"{'.'.join([names[loc[0]], *loc[1:]])}: {message}{suffix}"
    where = ".".join(loc)
    return f"{source}{'.' + where if where else ''}: {message}{suffix}"


def _bounds(model: type[BaseModel], loc: list[str]) -> tuple[object, object] | None:
    """The inclusive range of a top-level field bounded on both sides, if it is one."""
    field = model.model_fields.get(loc[0]) if len(loc) == 1 else None
    if field is None:
        return None
    low = next((m.ge for m in field.metadata if hasattr(m, "ge")), None)
    high = next((m.le for m in field.metadata if hasattr(m, "le")), None)
    return None if low is None or high is None else (low, high)


def samples_of(spec: JudgeSpec, default: int) -> int:
    """How many readings ``spec`` makes: its own ``samples``, else the run's ``default``."""
    return spec.samples if spec.samples is not None else default


def build_config(
    data: dict[str, Any], source: str = "config", names: Mapping[str, str] | None = None
) -> RunConfig:
    """Validate a config mapping, raising ConfigurationError with the field named.

    ``names`` reports the listed top-level fields under another name (the flag that set them).
    """
    data = dict(data)
    table = default_role_weights()
    judges = data.get("judges")
    if isinstance(judges, list):
        filled = []
        for entry in judges:
            if isinstance(entry, dict):
                entry = dict(entry)
                entry.setdefault("name", entry.get("role", ""))
                role = entry.get("role")
                if "weights" not in entry and isinstance(role, str) and role in table:
                    entry["weights"] = table[role]
            filled.append(entry)
        data["judges"] = filled
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigurationError(validation_message(exc, source, names, RunConfig)) from exc


def load_config(
    path: str | Path | None,
    overrides: dict[str, Any] | None = None,
    *,
    flags: Mapping[str, str] | None = None,
) -> RunConfig:
    """Read a panel config TOML (optional) and apply overrides (CLI flags, say).

    Args:
        path: The panel config TOML, or None for the defaults.
        overrides: Values that replace the file's; None values are ignored.
        flags: The flag that sets each override (``{"arguments": "--arguments"}``): a bad
            value given by a flag is reported under the flag's name, a bad value read from
            the file under the file's.
    """
    data: dict[str, Any] = read_toml(path, "config file") if path is not None else {}
    _, data = split_header(data, str(path))  # a preset's [preset] table, saved as a config
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    data.update(given)
    names = {k: flags[k] for k in given if k in flags} if flags else None
    return build_config(data, "config" if path is None else str(path), names)
