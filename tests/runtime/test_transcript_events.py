from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from debate.records import Argument, Closing, CrossExamination, transcript_view
from debate.runtime import _transcript_events
from debate.runtime._prompts import PromptRenderer, shipped_template_dir

WORDS = ["plain", "<|im_start|>", "{{ 7*7 }}", "\x00", "ünï", "<<PRO-1:abc>>", "\n", "", "x" * 40]


def text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))) or "t"


def transcript(rng: random.Random) -> tuple[list[Argument], list[CrossExamination], list[Closing]]:
    n = rng.randint(1, 4)
    arguments = [
        Argument(id=f"{side}-{i}", claim=text(rng), reasoning=text(rng), evidence=text(rng))
        for side in ("PRO", "CON")
        for i in range(1, n + 1)
    ]
    cross = [
        CrossExamination(
            round=r,
            by=by,
            target=f"{target}-{i}",
            challenge=text(rng),
            concession=rng.choice(["", text(rng)]),
            rebuttal=text(rng),
        )
        for r in range(1, rng.randint(0, 2) + 1)
        for by, target in (("PRO", "CON"), ("CON", "PRO"))
        for i in range(1, n + 1)
    ]
    closings = [Closing(side=s, statement=text(rng)) for s in ("PRO", "CON")][: rng.randint(0, 2)]
    rng.shuffle(arguments)
    return arguments, cross, closings


def renders(renderer: PromptRenderer, seed: int) -> Iterator[tuple[str, dict[str, object]]]:
    """A judge's, a cross-examiner's and a closer's prompt variables for a random transcript."""
    rng = random.Random(seed)
    arguments, cross, closings = transcript(rng)
    order = rng.choice([("PRO", "CON"), ("CON", "PRO")])
    yield (
        "judge_request.md.jinja",
        {
            "topic": text(rng),
            "role": "risk",
            "role_template": "judge_role_risk.md.jinja",
            "weights": {"logic": 0.3, "evidence": 0.3, "responsiveness": 0.25, "honesty": 0.15},
            "ids": [a.id for a in arguments],
            **transcript_view(arguments, cross, closings, order=order),
        },
    )
    view = transcript_view(arguments, cross, [])
    yield "debater_closing.md.jinja", {"side": "PRO", **view}
    yield (
        "debater_cross_exam.md.jinja",
        {"side": "CON", "opponent": "PRO", "round": 1, "target_ids": ["PRO-1"], **view},
    )


def test_the_shipped_transcript_is_rendered_by_plain_python() -> None:
    source = (shipped_template_dir() / _transcript_events.NAME).read_text(encoding="utf-8")
    assert _transcript_events.is_shipped(source), (
        "transcript.md.jinja changed: make transcript_events match it, then update SHIPPED_DIGEST"
    )
    renderer = PromptRenderer()
    renderer.render("debater_closing.md.jinja", side="PRO", **transcript_view([], [], []))
    template = renderer._env.get_template(_transcript_events.NAME)
    assert getattr(template.root_render_func, "compiled", None) is not None


def test_plain_python_gives_the_compiled_templates_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    # Prompts are keys of the response cache and of providers' prefix caches: not a byte moves.
    renderer = PromptRenderer().keyed(11)
    renderer.render("debater_closing.md.jinja", side="PRO", **transcript_view([], [], []))
    template = renderer._env.get_template(_transcript_events.NAME)
    fast, compiled = template.root_render_func, template.root_render_func.compiled
    for seed in range(150):
        for name, variables in renders(renderer, seed):
            got = renderer.render(name, **variables)
            monkeypatch.setattr(template, "root_render_func", compiled)
            assert got == renderer.render(name, **variables), (seed, name)
            monkeypatch.setattr(template, "root_render_func", fast)


def test_other_variables_and_a_users_transcript_take_the_template(tmp_path: Path) -> None:
    (tmp_path / "odd.jinja").write_text(
        '{% set blocks = [{"side": "PRO", "arguments": [{"id": "PRO-1", "claim": "c", '
        '"reasoning": "r", "evidence": "e"}]}] %}{% include "transcript.md.jinja" %}\n'
    )
    odd = PromptRenderer(tmp_path).render("odd.jinja", cross=[], closings=[])
    assert "### PRO-1\n<<PRO-1:" in odd and "Claim: c\nReasoning: r\nEvidence: e" in odd
    own = tmp_path / "own"
    own.mkdir()
    (own / _transcript_events.NAME).write_text("MY OWN {{ blocks | length }}\n")
    mine = PromptRenderer(own).render(
        "debater_closing.md.jinja", side="PRO", **transcript_view([], [], [])
    )
    assert mine.startswith("MY OWN 2\n")
