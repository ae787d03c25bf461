"""Grammar-constrained sampling that checks one token instead of the whole vocabulary.

llama-cpp-python puts the grammar in the sampler chain before top-k: every generated token
runs the grammar over all 49,152 candidates of SmolLM2's vocabulary (measured: about 8 ms a
token on 2 busy cores, 18% of a default debate's time). llama.cpp's own tools do it the
other way round: sample from the chain without the grammar, ask the grammar about that one
token, and only when it is rejected apply the grammar to every candidate and sample again.
Inside a JSON string almost every token the model picks is allowed, so the full pass is
rare. Every token still comes from the candidates the grammar allows, so a reply is as
valid as before; which valid token is drawn follows llama.cpp's tools rather than
llama-cpp-python (the same seed gives the same text with the same build).
"""

from __future__ import annotations

import contextlib
import ctypes
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])
"""The layout of llama.cpp's ``llama_token_data``."""


class GrammarChecked:
    """A sampler for one generation: the chain without the grammar, then the grammar check.

    Stands in for llama-cpp-python's ``LlamaSampler`` in ``Llama.sample`` (which calls
    ``sample(ctx, idx)``); it owns the grammar sampler and frees it when collected.
    """

    def __init__(self, llama_cpp: Any, chain: Any, grammar: Any, model: Any) -> None:
        self.lib = llama_cpp
        self.chain = chain
        """The ``LlamaSampler`` of the other samplers (penalties, top-k, ..., dist)."""
        vocab = model.vocab
        self.grammar = llama_cpp.llama_sampler_init_grammar(
            vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        if not self.grammar:
            raise ValueError("llama.cpp could not parse the reply grammar")
        self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(vocab))
        self.data = (llama_cpp.llama_token_data * self.n_vocab)()
        self.view = np.frombuffer(self.data, dtype=TOKEN_DATA)
        self.ids = np.arange(self.n_vocab, dtype=np.int32)
        """Every token id, made once per generation rather than once per token."""
        self.one = (llama_cpp.llama_token_data * 1)()
        self.tokens = 0
        self.full_passes = 0
        """Tokens the grammar rejected, so that it ran over the whole vocabulary."""

    def _candidates(self, ctx: Any, idx: int) -> Any:
        logits = self.lib.llama_get_logits_ith(ctx, idx)
        self.view["id"] = self.ids
        self.view["logit"] = np.ctypeslib.as_array(logits, shape=(self.n_vocab,))
        self.view["p"] = 0.0
        return self.lib.llama_token_data_array(
            data=self.data, size=self.n_vocab, selected=-1, sorted=False
        )

    def _allowed(self, token: int) -> bool:
        self.one[0].id, self.one[0].logit, self.one[0].p = token, 1.0, 0.0
        single = self.lib.llama_token_data_array(data=self.one, size=1, selected=-1, sorted=False)
        self.lib.llama_sampler_apply(self.grammar, ctypes.byref(single))
        return not math.isinf(self.one[0].logit)

    def sample(self, ctx: Any, idx: int) -> int:
        """The next token: the chain's pick if the grammar allows it, else a constrained one."""
        raw = ctx.ctx
        candidates = self._candidates(raw, idx)
        self.lib.llama_sampler_apply(self.chain.sampler, ctypes.byref(candidates))
        token = int(self.data[candidates.selected].id)
        self.tokens += 1
        if not self._allowed(token):
            self.full_passes += 1
            candidates = self._candidates(raw, idx)
            self.lib.llama_sampler_apply(self.grammar, ctypes.byref(candidates))
            self.lib.llama_sampler_apply(self.chain.sampler, ctypes.byref(candidates))
            token = int(self.data[candidates.selected].id)
        self.lib.llama_sampler_accept(self.grammar, token)
        self.lib.llama_sampler_accept(self.chain.sampler, token)
        return token

    def close(self) -> None:
        """Free the grammar sampler (the chain frees itself)."""
        if self.grammar:
            self.lib.llama_sampler_free(self.grammar)
            self.grammar = None

    def __del__(self) -> None:
        self.close()


@contextlib.contextmanager
def grammar_checked(llama_cpp: Any, llm: Any) -> Iterator[list[GrammarChecked]]:
    """Within the block, ``llm`` samples through :class:`GrammarChecked` (yields them).

    ``Llama.generate`` builds its sampler with ``_init_sampler(..., grammar=...)``; an
    instance attribute shadows that method for the block (under the model's lock), building
    the chain without the grammar and wrapping it. A ``Llama`` without that method (another
    llama-cpp-python version, a stand-in) samples its own way.
    """
    made: list[GrammarChecked] = []
    init = getattr(llm, "_init_sampler", None)
    if init is None:  # not llama-cpp-python's Llama as we know it: its own sampling stays
        yield made
        return

    def init_sampler(*args: Any, grammar: Any = None, **kwargs: Any) -> Any:
        chain = init(*args, grammar=None, **kwargs)
        if grammar is None:
            return chain
        sampler = GrammarChecked(llama_cpp, chain, grammar, llm._model)
        made.append(sampler)
        return sampler

    llm._init_sampler = init_sampler
    try:
        yield made
    finally:
        del llm._init_sampler
        for sampler in made:
            sampler.close()
