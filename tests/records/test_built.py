"""``built``: the record ``model_construct`` makes, field for field, without its cost."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from debate.records import (
    Agreement,
    Decision,
    Diagnostics,
    ItemDecision,
    Thresholds,
    Vote,
    built,
)

AGREEMENT: dict[str, Any] = {
    "alpha": 0.5,
    "alpha_raw": None,
    "alpha_by_dimension": {"logic": 0.25},
    "kappa": None,
    "argument_variance": {"P1": 1.5},
    "judges_scored": 3,
    "judges_unscored": 1,
}
CASES: list[tuple[type[BaseModel], dict[str, Any]]] = [
    (Agreement, AGREEMENT),
    (Agreement, {**AGREEMENT, "clusters": [["a", "b"]], "effective_votes": 1.5}),
    (Diagnostics, {}),
    (Diagnostics, {"no_difference": True, "alpha_without_judge": {"a": None}}),
    (
        Vote,
        {
            "pro": 0.6,
            "con": 0.4,
            "margin": 0.2,
            "topic_type": "recorded",
            "judge_weights": {"a": 1.0},
            "calibration": "minmax",
        },
    ),
    (
        Decision,
        {
            "outcome": "winner",
            "winner": "PRO",
            "reasons": ["r"],
            "thresholds": Thresholds(),
            "recommendation": "act",
        },
    ),
    (
        ItemDecision,
        {
            "item": "1",
            "options": ("x", "y"),
            "outcome": "too_close",
            "winner": None,
            "margin": 0.0,
            "confidence": 0.0,
            "judge_margins": {"a": None},
            "weights": {"a": 1.0},
            "reasons": [],
        },
    ),
]


@pytest.mark.parametrize(("cls", "values"), CASES)
def test_built_is_model_construct(cls: type[BaseModel], values: dict[str, Any]) -> None:
    made, constructed = built(cls, **values), cls.model_construct(**values)
    assert list(made.__dict__.items()) == list(constructed.__dict__.items())
    assert made.model_fields_set == constructed.model_fields_set
    assert made.__pydantic_extra__ is None and made.__pydantic_private__ is None
    assert made.model_dump_json() == constructed.model_dump_json()
    assert made == cls.model_validate(values)


def test_defaults_are_fresh_per_record() -> None:
    first, second = built(Diagnostics), built(Diagnostics)
    assert first.alpha_without_judge is not second.alpha_without_judge


def test_a_missing_field_or_an_unknown_name_is_refused() -> None:
    with pytest.raises(TypeError, match="every required field"):
        built(Diagnostics, nonsense=1)
    with pytest.raises(TypeError, match="every required field"):
        built(Vote, pro=None)
