"""The shipped ``transcript.md.jinja`` rendered by plain Python, for the transcripts we build.

Every judge's prompt and every debater's cross-examination and closing include the
transcript: a debate renders it eight times. Jinja's compiled loop reads each field through
the sandbox's ``getattr`` and yields a few strings per argument through two generators, and
that was a third of the cost of rendering a judge's prompt. For the shipped template, unedited
(its source's digest is :data:`SHIPPED_DIGEST`), and for the records
:func:`debate.records.transcript_view` gives it, :func:`transcript_events` yields the same text
in one string, each delimited text through the environment's own ``data`` filter (so the
placeholders and nonce are the same) and each loop through its step filter (so the render
budget counts the same). Anything else (a user's own ``transcript.md.jinja``, an edited one,
other variables) takes the compiled template. ``tests/runtime/test_transcript_events.py``
holds the two to the same bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import Any

from jinja2 import Template
from jinja2.runtime import Context

from debate.records import Argument, Closing, CrossExamination

NAME = "transcript.md.jinja"
SHIPPED_DIGEST = "38a29f76c5ab24b59decce48502147582bc2e8406cbd16a4165862eefe7a9ef5"
"""SHA-256 of the shipped ``prompts/transcript.md.jinja``; edit it and this path turns off
(a test says so) until :func:`transcript_events` is made to match and the digest updated."""

Root = Callable[[Context], Iterator[str]]
_VARIABLES = ("blocks", "cross", "closings")


def is_shipped(source: str) -> bool:
    """Whether a template source is the shipped transcript, byte for byte."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest() == SHIPPED_DIGEST


def specialise(template: Template) -> None:
    """Render ``template`` (the shipped transcript, compiled) with :func:`transcript_events`."""
    compiled: Root = template.root_render_func
    if getattr(compiled, "compiled", None) is not None:  # already specialised
        return

    def root(context: Context) -> Iterator[str]:
        return transcript_events(context, compiled)

    root.compiled = compiled  # type: ignore[attr-defined]
    template.root_render_func = root


def _ours(blocks: Any, cross: Any, closings: Any) -> bool:
    """Whether the variables are the records ``transcript_view`` gives, nothing else."""
    return (
        type(blocks) is list
        and type(cross) is list
        and type(closings) is list
        and all(
            type(b) is dict
            and type(b.get("side")) is str
            and type(b.get("arguments")) is list
            and all(type(a) is Argument for a in b["arguments"])
            for b in blocks
        )
        and all(type(x) is CrossExamination for x in cross)
        and all(type(c) is Closing for c in closings)
    )


def transcript_events(context: Context, compiled: Root) -> Iterator[str]:
    """The shipped template's output for ``context``: one string, or the compiled events."""
    blocks, cross, closings = (context.resolve_or_missing(n) for n in _VARIABLES)
    if not _ours(blocks, cross, closings):
        yield from compiled(context)
        return
    filters = context.environment.filters
    data, step = filters["data"], filters["_render_step"]
    out = ["# Opening arguments\n"]
    for block in step(blocks):
        out += ("\n## ", str(block["side"]), " arguments\n")
        for a in step(block["arguments"]):
            text = f"Claim: {a.claim!s}\nReasoning: {a.reasoning!s}\nEvidence: {a.evidence!s}"
            out += ("\n### ", str(a.id), "\n", str(data(context, text, a.id)), "\n")
    if cross:
        out.append("\n# Cross-examination\n")
        for x in step(cross):
            out += ("\n### Round ", str(x.round), ": ", str(x.by), " examines ", str(x.target))
            text = (
                f"Challenge: {x.challenge!s}\nConcession: {x.concession!s}\n"
                f"Rebuttal: {x.rebuttal!s}"
            )
            out += ("\n", str(data(context, text, x.by)), "\n")
    if closings:
        out.append("\n# Closing statements\n")
        for c in step(closings):
            out += ("\n## ", str(c.side), " closing\n", str(data(context, c.statement, c.side)))
            out.append("\n")
    yield "".join(out)
