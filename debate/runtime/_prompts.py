"""Prompt rendering in a sandboxed Jinja environment.

Templates come from ``prompts/`` (shipped inside the wheel as ``debate/_prompts``) or from
a folder the user names, whose files take precedence. Debater and candidate text only ever
enters a template as a *variable*, passed through the ``data`` filter, which wraps it in
delimiters the text cannot forge; it is never template source, so ``{{ 7*7 }}`` written by
a debater reaches the model literally.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import (
    FileSystemLoader,
    StrictUndefined,
    TemplateNotFound,
    TemplateSyntaxError,
    UndefinedError,
)
from jinja2.sandbox import SandboxedEnvironment

from debate.exceptions import ConfigurationError

PACKAGE_DIR = Path(__file__).resolve().parent.parent


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


def neutralise_markers(text: str) -> str:
    """Break every common chat-template marker so the text cannot open a new turn.

    A zero-width space goes after the marker's first character: the model's tokenizer no
    longer sees a special token or a role prefix, and a person reading the prompt still
    reads the text as written.
    """
    return _MARKERS.sub(lambda m: m.group(0)[0] + ZWSP + m.group(0)[1:], text)


def data_block(text: object, label: str = "content") -> str:
    """Wrap untrusted text in delimiters that it cannot contain.

    The marker carries a digest of the text itself, so no text can contain its own closing
    marker; chat-template role markers such as ``<|im_start|>`` are broken up so the text
    cannot open a new turn.
    """
    body = neutralise_markers(str(text))
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
    size = 8
    while digest[:size] in body:
        size += 4
    tag = f"{label}:{digest[:size]}"
    return f"<<{tag}>>\n{body}\n<</{tag}>>"


@lru_cache(maxsize=32)
def _environment(folders: tuple[str, ...]) -> SandboxedEnvironment:
    """One environment per template search path, so compiled templates are reused by runs.

    Jinja reloads a template whose file changed (auto_reload), so edits are still seen.
    """
    env = SandboxedEnvironment(
        loader=FileSystemLoader(list(folders)),
        undefined=StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["data"] = data_block
    return env


class PromptRenderer:
    """Renders the named templates with StrictUndefined (a missing variable is an error)."""

    def __init__(self, template_dir: str | Path | None = None) -> None:
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
        if template_dir is not None:
            self._compile_all(Path(template_dir))

    def _compile_all(self, folder: Path) -> None:
        """Compile every template of a user's folder now, before any model is called.

        A syntax error or a file that is not UTF-8 is bad input: one line naming the file
        and the line, rather than a traceback after the first calls were paid for.
        """
        for path in sorted(folder.glob("*.jinja")):
            try:
                self._env.get_template(path.name)
            except TemplateSyntaxError as exc:
                raise ConfigurationError(
                    f"template {path} line {exc.lineno}: {exc.message}; fix the template"
                ) from exc
            except UnicodeDecodeError as exc:
                raise ConfigurationError(
                    f"template {path}: not UTF-8 text (byte {exc.start}); save it as UTF-8"
                ) from exc

    def has(self, name: str) -> bool:
        """Whether a template of that name exists in any folder."""
        try:
            self._env.get_template(name)
        except TemplateNotFound:
            return False
        return True

    def digest(self, name: str) -> str:
        """A short digest of a template's source, as this renderer would load it.

        Identifies which version of a template shaped a judge (see ``debate.quality._track``): a
        template overridden with ``--templates`` or edited in place gets a new digest.
        """
        if name not in self._digests:  # read the file once per renderer, not per judge call
            try:
                source, _, _ = self._env.loader.get_source(self._env, name)  # type: ignore[union-attr]
            except TemplateNotFound as exc:
                raise ConfigurationError(f"template {name} not found; add it") from exc
            self._digests[name] = hashlib.sha256(source.encode("utf-8")).hexdigest()[:8]
        return self._digests[name]

    def render(self, name: str, **variables: Any) -> str:
        """Render one template.

        Raises:
            ConfigurationError: the template is missing or uses an undefined variable.
        """
        try:
            template = self._env.get_template(name)
        except TemplateNotFound as exc:
            where = ", ".join(str(f) for f in self.folders)
            raise ConfigurationError(
                f"template {name} not found in {where}; add it or fix the template folder"
            ) from exc
        try:
            return template.render(**variables).strip() + "\n"
        except UndefinedError as exc:
            raise ConfigurationError(f"template {name}: {exc.message}; fix the template") from exc
