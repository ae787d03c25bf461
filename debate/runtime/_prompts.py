"""Prompt rendering in a sandboxed Jinja environment.

Templates come from ``prompts/`` (shipped inside the wheel as ``debate/_prompts``) or from
a folder the user names, whose files take precedence. Debater and candidate text only ever
enters a template as a *variable*, passed through the ``data`` filter, which wraps it in
delimiters the text cannot forge; it is never template source, so ``{{ 7*7 }}`` written by
a debater reaches the model literally.

A user's template is code, so each render runs under a budget: at most
:data:`MAX_RENDER_STEPS` loop iterations and calls, ``range`` of at most
:data:`MAX_TEMPLATE_RANGE` numbers, text or lists multiplied to at most
:data:`MAX_RENDER_CHARS`, and :data:`DEFAULT_RENDER_SECONDS` (less when a call's timeout
or the run's deadline is shorter). A shipped prompt takes a few hundred steps and a
millisecond; a template past its budget is refused in one line, fast, rather than holding
the event loop (and every call with it) for as long as it runs.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import math
import re
import secrets
import time
from collections.abc import Iterable, Iterator, MutableMapping
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import (
    FileSystemLoader,
    StrictUndefined,
    Template,
    TemplateError,
    TemplateNotFound,
    TemplateSyntaxError,
    nodes,
    pass_context,
)
from jinja2.meta import find_referenced_templates
from jinja2.runtime import Context
from jinja2.sandbox import SandboxedEnvironment

from debate.exceptions import ConfigurationError
from debate.records import RunConfig

PACKAGE_DIR = Path(__file__).resolve().parent.parent
NONCE_VARIABLE = "_delimiter_key"
"""The render-context variable that carries a render's delimiter key (never in a prompt)."""
COLLECT_VARIABLE = "_delimited_texts"
"""The render-context variable in which a render collects the texts to delimit."""
PLACEHOLDER_VARIABLE = "_placeholder_key"
"""The render-context variable that carries the key of a render's placeholders."""

MAX_RENDER_STEPS = 100_000
"""Loop iterations and calls one render may make (a shipped prompt makes a few hundred)."""
MAX_TEMPLATE_RANGE = 10_000
"""The most numbers a template's ``range`` may count (Jinja's sandbox allows 100,000)."""
MAX_RENDER_CHARS = 1_000_000
"""The longest text (or list) a template may make by multiplying one (``"x" * n``)."""
MAX_POWER_DIGITS = 10_000
"""The most digits ``a ** b`` may have in a template."""
DEFAULT_RENDER_SECONDS = 2.0
"""Wall-clock seconds one render may take; a shipped prompt renders in about a millisecond."""
STEP_FILTER = "_render_step"
"""The filter every ``for`` loop's iterable passes through, counting its iterations."""


class RenderBudgetExceeded(Exception):
    """A render went past its budget (steps, seconds, a range or a product too large)."""


class _Budget:
    """The steps and seconds left to one render (held in :data:`_BUDGET` while it runs)."""

    __slots__ = ("end", "seconds", "steps")

    def __init__(self, seconds: float) -> None:
        self.steps = 0
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def step(self) -> None:
        """Count one loop iteration or call; raise once the render is over its budget."""
        self.steps += 1
        if self.steps > MAX_RENDER_STEPS:
            raise RenderBudgetExceeded(
                f"more than {MAX_RENDER_STEPS} loop iterations and calls in one render"
            )
        if not self.steps & 63 and time.monotonic() > self.end:
            raise RenderBudgetExceeded(f"a render took over {self.seconds:g} s")


_BUDGET: ContextVar[_Budget | None] = ContextVar("debate_render_budget", default=None)
"""The budget of the render running in this context (None outside a render)."""
_LOADED: ContextVar[dict[str, Template] | None] = ContextVar("debate_render_loaded", default=None)
"""The templates of the renderer that is rendering (see :meth:`_Sandbox._load_template`)."""


def render_seconds(*limits: float | None) -> float:
    """Seconds one render may take: :data:`DEFAULT_RENDER_SECONDS`, or a shorter limit.

    Given a call's timeout and the run's deadline, a render never outlasts either.
    """
    return min([DEFAULT_RENDER_SECONDS, *(x for x in limits if x is not None and x > 0)])


def _render_step(iterable: Iterable[Any]) -> Iterable[Any]:
    """The ``for`` loops' filter: each iteration counts against the render's budget."""
    budget = _BUDGET.get()
    return iterable if budget is None else _counted(iterable, budget)


def _counted(iterable: Iterable[Any], budget: _Budget) -> Iterator[Any]:
    for item in iterable:
        budget.step()
        yield item


def _range(*args: int) -> range:
    """``range`` in a template: at most :data:`MAX_TEMPLATE_RANGE` numbers."""
    numbers = range(*args)
    try:
        size = len(numbers)
    except OverflowError:
        size = MAX_TEMPLATE_RANGE + 1
    if size > MAX_TEMPLATE_RANGE:
        raise RenderBudgetExceeded(
            f"range of {size if size <= 10**18 else 'too many'} numbers; at most "
            f"{MAX_TEMPLATE_RANGE} in a template"
        )
    return numbers


def shipped_template_dir() -> Path:
    """The templates of this installation: inside the wheel, or ``prompts/`` of a checkout."""
    for candidate in (PACKAGE_DIR / "_prompts", PACKAGE_DIR.parent / "prompts"):
        if candidate.is_dir():
            return candidate
    raise ConfigurationError(  # pragma: no cover - a broken installation
        "the prompt templates are missing from this installation; reinstall debate"
    )


ZWSP = "\u200b"
"""A zero-width space: breaks a marker for the tokenizer, invisible to a person."""

_MARKERS = re.compile(
    r"<\||\|>"  # ChatML and friends: <|im_start|>, <|eot_id|>, <|user|>
    r"|\[/?INST\]|<</?SYS>>"  # Llama 2 / Mistral
    r"|</?s>"  # sentencepiece sequence markers
    r"|<(?:start|end)_of_turn>"  # Gemma
    r"|^(?:Human|Assistant|System|User)\s*:",  # Anthropic-style and plain role prefixes
    re.IGNORECASE | re.MULTILINE,
)


@lru_cache(maxsize=4096)
def neutralise_markers(text: str) -> str:
    """Break every common chat-template marker so the text cannot open a new turn.

    A zero-width space goes after the marker's first character: the model's tokenizer no
    longer sees a special token or a role prefix, and a person reading the prompt still
    reads the text as written. Remembered: a debate delimits each argument in every later
    prompt and in each judge's, and scanning a text for the markers cost more than the
    rest of delimiting it.
    """
    return _MARKERS.sub(lambda m: m.group(0)[0] + ZWSP + m.group(0)[1:], text)


def data_block(text: object, label: str = "content", key: bytes | None = None) -> str:
    """Wrap untrusted text in delimiters that it cannot forge.

    With ``key`` (a render's secret nonce, see :meth:`PromptRenderer.render`) the marker is
    an HMAC of the label under that key: no text can contain it, because no author of the
    text has seen this render's key, and a genuine block copied out of an earlier prompt
    carries another render's marker. Without a key, a digest of the text itself serves
    (its own closing marker cannot be in it). Chat-template markers such as
    ``<|im_start|>`` or ``[INST]`` are broken up so the text cannot open a new turn.
    """
    body = neutralise_markers(str(text))
    if key is None:
        digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
    else:
        digest = _label_digest(key, label)
    size = 8 if key is None else 12
    while digest[:size] in body:
        size += 4
    tag = f"{label}:{digest[:size]}"
    return f"<<{tag}>>\n{body}\n<</{tag}>>"


@lru_cache(maxsize=256)
def _label_digest(key: bytes, label: str) -> str:
    """A label's marker under a render's key (one-shot HMAC, in C).

    Remembered: judges shown one transcript in one order share the key, and each delimits
    the same labels.
    """
    return hmac.digest(key, label.encode("utf-8"), "sha256").hex()


@pass_context
def _data_filter(context: Context, text: object, label: str = "content") -> str:
    """The ``data`` filter: delimiters keyed by the render's nonce (see ``render``).

    The nonce covers every text a render delimits, so it is known only once the render has
    seen them all: the filter collects each text and leaves a placeholder, which the render
    replaces afterwards (on a fallback first pass, with no placeholder key, it only collects).
    """
    # resolve_or_missing is what Context.get asks, without its KeyError round trip (a
    # debate delimits a hundred texts); ``missing`` passes none of the type tests below.
    collected = context.resolve_or_missing(COLLECT_VARIABLE)
    if isinstance(collected, list):
        collected.append((label, str(text)))
        key = context.resolve_or_missing(PLACEHOLDER_VARIABLE)
        return f"\x00{key}:{len(collected) - 1}\x00" if isinstance(key, str) else ""
    key = context.resolve_or_missing(NONCE_VARIABLE)
    return data_block(text, label, key if isinstance(key, bytes) else None)


def render_nonce(secret: bytes, texts: list[tuple[str, str]]) -> bytes:
    """The key of one render: an HMAC, under ``secret``, of every text it delimits.

    A text can therefore never carry its own render's markers (they depend on the text),
    a block copied out of another prompt carries that prompt's markers, and prompts that
    delimit the same texts share them: judges reading one transcript in one order share a
    byte-identical prefix for the provider's prefix cache, and a seeded run renders the
    same prompts again (its calls are found in the response cache).
    """
    blob = json.dumps(texts, ensure_ascii=False)
    return hmac.digest(secret, blob.encode("utf-8"), "sha256")


_PLAIN_VALUES = frozenset({str, int, float, bool, type(None), list, tuple, dict})
"""Types of attribute values that cannot be a bound ``str.format`` (see ``_Sandbox.getattr``)."""


class _Sandbox(SandboxedEnvironment):
    """Jinja's sandbox, with its verdict on each attribute remembered per type and name.

    The sandbox asks :meth:`is_safe_attribute` on every attribute a template reads (about 80
    per judge prompt), and that was a third of the cost of rendering one. Its answer depends
    only on the name and on ``isinstance`` tests of the object
    (:func:`jinja2.sandbox.is_internal_attribute`), so it is the same for every object of one
    type: each (type, name) is asked once and the answer kept.
    """

    intercepted_binops = frozenset({"*", "**"})
    """Checked for size (:meth:`call_binop`): the two operators that can make a huge value
    from small ones in one step."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._safe: dict[tuple[type, str], bool] = {}
        self.sources: dict[str, str] = {}
        """Per template file, the SHA-256 of its source as last compiled (see ``_parse``)."""
        self.globals["range"] = _range
        self.filters[STEP_FILTER] = _render_step

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        """Parse a template, with every ``for`` loop's iterable counted (:data:`STEP_FILTER`).

        A loop runs as plain Python in the compiled template, out of the sandbox's sight;
        wrapping its iterable in a filter is the one hook every iteration passes through.
        """
        tree = super()._parse(source, name, filename)
        if name is not None and filename is not None:
            self.sources[filename] = hashlib.sha256(source.encode("utf-8")).hexdigest()
        for loop in tree.find_all(nodes.For):
            loop.iter = nodes.Filter(loop.iter, STEP_FILTER, [], [], None, None, lineno=loop.lineno)
        return tree

    def call(
        __self,  # noqa: B902 - Jinja's own signature: the names cannot clash with kwargs
        __context: Context,
        __obj: Any,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        """Call ``__obj`` for a template; each call (a macro, a recursive loop) is a step."""
        budget = _BUDGET.get()
        if budget is not None:
            budget.step()
        return super().call(__context, __obj, *args, **kwargs)

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        """``*`` and ``**``, refused when their result would be too large to make."""
        if operator == "*":
            for seq, n in ((left, right), (right, left)):
                sized = isinstance(seq, str | list | tuple) and isinstance(n, int)
                if sized and len(seq) * n > MAX_RENDER_CHARS:
                    raise RenderBudgetExceeded(
                        f"a text or list of {len(seq) * n} items; at most {MAX_RENDER_CHARS}"
                    )
        elif isinstance(left, int) and isinstance(right, int) and abs(left) > 1 and right > 0:
            if right * math.log10(abs(left)) > MAX_POWER_DIGITS:
                raise RenderBudgetExceeded(f"a power of more than {MAX_POWER_DIGITS} digits")
        return super().call_binop(context, operator, left, right)

    def getattr(self, obj: Any, attribute: str) -> Any:
        """Jinja's ``getattr``, without its ``str.format`` check for a plain data value.

        Only a bound ``format`` method is wrapped (``wrap_str_format``), and a prompt's
        variables are text, numbers and lists of them: the check was a quarter of the cost
        of every attribute a template reads. Anything else takes Jinja's own path.
        """
        try:
            value = getattr(obj, attribute)
        except AttributeError:  # a dict's item, as Jinja reads it (no safety check)
            try:
                return obj[attribute]
            except (TypeError, LookupError):
                return self.undefined(obj=obj, name=attribute)
        if type(value) not in _PLAIN_VALUES:
            return super().getattr(obj, attribute)
        safe = self._safe.get((type(obj), attribute))  # is_safe_attribute's memo, read inline
        if safe or (safe is None and self.is_safe_attribute(obj, attribute, value)):
            return value
        return self.unsafe_undefined(obj, attribute)

    def make_globals(self, d: MutableMapping[str, Any] | None) -> MutableMapping[str, Any]:
        """A template's globals as one dict, not Jinja's ChainMap over the environment's.

        Each render copies its template's globals into a fresh context, walking them twice
        (``dict`` and ``set``): a ChainMap is walked in Python, a dict in C, and the walks
        were a fifth of the cost of rendering a prompt. This environment's globals are all
        set when it is made, before any template is loaded (as Jinja asks), so a copy
        holds the same names the ChainMap would show.
        """
        return {**self.globals, **(d or {})}

    def _load_template(self, name: str, globals: MutableMapping[str, Any] | None) -> Template:
        """An included template, looked up once per renderer as the ones it renders are.

        Jinja checks an included file's time stamp at every render (a stat per include of
        every prompt); a renderer (a run's) keeps what it found, so a file edited during a
        run is seen by the next run, as for the templates it renders.
        """
        loaded = _LOADED.get()
        if loaded is None or globals:
            return super()._load_template(name, globals)
        template = loaded.get(name)
        if template is None:
            template = loaded[name] = super()._load_template(name, globals)
        return template

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        """Jinja's own verdict, asked once per type of object and attribute name."""
        key = (type(obj), attr)
        safe = self._safe.get(key)
        if safe is None:
            safe = self._safe[key] = super().is_safe_attribute(obj, attr, value)
        return safe


@lru_cache(maxsize=32)
def _environment(folders: tuple[str, ...]) -> _Sandbox:
    """One environment per template search path, so compiled templates are reused by runs.

    Jinja reloads a template whose file changed (auto_reload), so edits are still seen.
    """
    env = _Sandbox(
        loader=FileSystemLoader(list(folders)),
        undefined=StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["data"] = _data_filter
    return env


class PromptRenderer:
    """Renders the named templates with StrictUndefined (a missing variable is an error).

    Args:
        template_dir: A folder whose templates override the shipped ones.
        secret: Keys every render's delimiters (default: random, or the seed's; see
            :meth:`keyed`).
        seconds: Wall-clock limit of one render (see :func:`render_seconds`).
    """

    def __init__(
        self,
        template_dir: str | Path | None = None,
        *,
        secret: bytes | None = None,
        seconds: float = DEFAULT_RENDER_SECONDS,
    ) -> None:
        folders = [shipped_template_dir()]
        if template_dir is not None:
            user = Path(template_dir)
            if not user.is_dir():
                raise ConfigurationError(
                    f"templates: {user} is not a folder; point --templates at a folder of "
                    ".jinja files named like the shipped ones"
                )
            folders.insert(0, user)
        self.folders = folders
        self._env = _environment(tuple(str(f) for f in folders))
        self._digests: dict[str, str] = {}
        self._templates: dict[str, Template] = {}
        self._given = secret
        self.secret = secret if secret is not None else secrets.token_bytes(32)
        """Keys every render's delimiters (see :func:`render_nonce`)."""
        self.seconds = seconds
        """Wall-clock limit of one render."""
        if template_dir is not None:
            self._compile_all(Path(template_dir))

    @classmethod
    def for_run(cls, config: RunConfig) -> PromptRenderer:
        """The renderer of a run: its templates, each render within its calls' time limits."""
        return cls(config.templates, seconds=render_seconds(config.timeout, config.deadline))

    def keyed(self, seed: int) -> PromptRenderer:
        """This renderer with delimiter keys derived from a run's seed (unless given one).

        The same seed renders the same prompts, so a seeded run is reproducible and a
        resumed run finds its calls in the response cache; a text author cannot use the key
        even knowing the seed, because each render's nonce covers the text itself.
        """
        if self._given is not None:
            return self
        twin = copy.copy(self)
        twin.secret = hashlib.sha256(f"debate-delimiters:{seed}".encode()).digest()
        return twin

    def _compile_all(self, folder: Path) -> None:
        """Compile every template of a user's folder now, before any model is called.

        A syntax error, a file that is not UTF-8 or an ``include`` (``import``,
        ``extends``) of a template that is in no template folder is bad input: one line
        naming the file, rather than a failure after the first calls were paid for (and
        the output folder made). A name computed at render time is checked when used.
        """
        for path in sorted(folder.glob("*.jinja")):
            try:
                self._env.get_template(path.name)
                self._check_references(path.name)
            except TemplateSyntaxError as exc:
                raise ConfigurationError(
                    f"template {path} line {exc.lineno}: {exc.message}; fix the template"
                ) from exc
            except UnicodeDecodeError as exc:
                raise ConfigurationError(
                    f"template {path}: not UTF-8 text (byte {exc.start}); save it as UTF-8"
                ) from exc

    def _check_references(self, name: str) -> None:
        """Every template ``name`` includes, imports or extends by a constant name exists.

        As Jinja reads them: an ``include ... ignore missing`` may name none, and an include
        of a list needs one of the list.
        """
        source, _, _ = self._env.loader.get_source(self._env, name)  # type: ignore[union-attr]
        kinds = (nodes.Extends, nodes.FromImport, nodes.Import, nodes.Include)
        for node in self._env.parse(source).find_all(kinds):
            if isinstance(node, nodes.Include) and node.ignore_missing:
                continue
            names = list(find_referenced_templates(nodes.Template([node])))
            if None in names:  # computed while rendering: checked then
                continue
            try:
                self._env.select_template([n for n in names if n is not None])
            except TemplateNotFound as exc:  # select_template's TemplatesNotFound too
                raise ConfigurationError(self._missing(name, str(names[0]))) from exc

    def _missing(self, name: str, other: str) -> str:
        where = ", ".join(str(f) for f in self.folders)
        return (
            f"template {name}: includes {other!r}, which is in no template folder ({where}); "
            "a template includes only templates of those folders, by a name inside one"
        )

    def has(self, name: str) -> bool:
        """Whether a template of that name exists in any folder."""
        try:
            self._env.get_template(name)
        except TemplateNotFound:
            return False
        return True

    def digest(self, name: str) -> str:
        """A short digest of a template's source, as this renderer would load it.

        Identifies which version of a template shaped a judge (see ``debate.judgments._track``): a
        template overridden with ``--templates`` or edited in place gets a new digest.
        """
        if name not in self._digests:  # once per renderer, not per judge call
            self._digests[name] = self._source_digest(name)[:8]
        return self._digests[name]

    def _source_digest(self, name: str) -> str:
        """SHA-256 of a template's source as Jinja last compiled it, else as its file reads.

        Jinja recompiles a file edited since, and the digest of what it compiled was kept
        then (``_Sandbox._parse``): no file read per judge and run (four a debate).
        """
        try:
            filename = self._env.get_template(name).filename
        except TemplateNotFound as exc:
            raise ConfigurationError(f"template {name} not found; add it") from exc
        except TemplateError:  # a template that does not compile still has a version
            filename = None
        found = self._env.sources.get(filename or "")
        if found is None:
            source, _, _ = self._env.loader.get_source(self._env, name)  # type: ignore[union-attr]
            found = hashlib.sha256(source.encode("utf-8")).hexdigest()
        return found

    def render(self, name: str, **variables: Any) -> str:
        """Render one template.

        Raises:
            ConfigurationError: the template is missing or uses an undefined variable.
        """
        template = self._templates.get(name)
        try:
            if template is None:
                # Looked up once per renderer (a run's): Jinja's own lookup checks the file's
                # time stamp on every render, a stat call per prompt; a file edited during a
                # run is seen by the next run.
                template = self._templates[name] = self._env.get_template(name)
        except TemplateNotFound as exc:
            where = ", ".join(str(f) for f in self.folders)
            raise ConfigurationError(
                f"template {name} not found in {where}; add it or fix the template folder"
            ) from exc
        budget, loaded = _BUDGET.set(_Budget(self.seconds)), _LOADED.set(self._templates)
        try:
            return self._render_once(template, variables)
        except TemplateNotFound as exc:  # an include whose name was computed while rendering
            raise ConfigurationError(self._missing(name, str(exc.name))) from exc
        except TemplateError as exc:  # a user's template read what it may not, or is broken
            raise ConfigurationError(f"template {name}: {exc.message}; fix the template") from exc
        except RenderBudgetExceeded as exc:
            raise ConfigurationError(
                f"template {name}: runs away ({exc}); a prompt renders in milliseconds, so "
                "bound its loops"
            ) from exc
        except RecursionError as exc:
            raise ConfigurationError(
                f"template {name}: calls itself without end (a macro or recursive loop); "
                "bound the recursion"
            ) from exc
        except (ArithmeticError, TypeError) as exc:  # 1/0, "a" + 1: the template's own
            raise ConfigurationError(f"template {name}: {exc}; fix the template") from exc
        finally:
            _BUDGET.reset(budget)
            _LOADED.reset(loaded)

    def _render_once(self, template: Template, variables: dict[str, Any]) -> str:
        """One pass that leaves placeholders for the delimited texts, then fills them in.

        The prompt is the same as the two passes of :meth:`_render_twice` give (the first
        collecting the texts, the second delimiting them under their nonce), at half the
        cost: rendering prompts was a quarter of this package's CPU per model call. A
        placeholder carries a per-process random key, so no text can forge one; a template
        that transforms the filter's output (``| upper``) loses its placeholders, and is
        rendered in two passes instead.
        """
        texts: list[tuple[str, str]] = []
        draft = template.render(
            **variables, **{COLLECT_VARIABLE: texts, PLACEHOLDER_VARIABLE: _PLACEHOLDER_KEY}
        )
        nonce = render_nonce(self.secret, texts)
        blocks = [data_block(text, label, nonce) for label, text in texts]
        parts = _PLACEHOLDER.split(draft)
        # split() alternates text and captured indices: text, 0, text, 1, ..., text.
        if [int(i) for i in parts[1::2]] != list(range(len(texts))):
            return self._render_twice(template, variables)
        parts[1::2] = blocks
        return "".join(parts).strip() + "\n"

    def _render_twice(self, template: Template, variables: dict[str, Any]) -> str:
        """Collect the delimited texts in a first pass, delimit them in a second."""
        texts: list[tuple[str, str]] = []
        template.render(**variables, **{COLLECT_VARIABLE: texts})
        nonce = render_nonce(self.secret, texts)
        return template.render(**variables, **{NONCE_VARIABLE: nonce}).strip() + "\n"


_PLACEHOLDER_KEY = secrets.token_hex(16)
"""The key of this process's placeholders: random, so no delimited text can contain one."""
_PLACEHOLDER = re.compile(f"\x00{_PLACEHOLDER_KEY}:(\\d+)\x00")
