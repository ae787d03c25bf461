"""The policy file: a round trip, the records' own consistency, and every one-line error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import debate
from debate.exceptions import ConfigurationError
from debate.records import DEFAULT_CONDITION, Policy, TierPolicy, guarantee_sentence
from debate.stats import Platt
from debate.storage import read_policy, write_policy


def policy_data() -> dict[str, Any]:
    """A two-tier policy: tier 1 declares 120 of 200 units, tier 2 declares 50 of the 80 left."""
    return {
        "format": "debate-policy/1",
        "kind": "verdicts",
        "dimension": None,
        "target_agreement": 0.9,
        "risk": 0.1,
        "tiers": [
            {
                "tier": 1,
                "judges": ["small-a", "small-b"],
                "weights": {"small-a": 1.0, "small-b": 0.5},
                "calibrator": {"slope": 2.5, "intercept": -0.3, "method": "platt", "n": 200},
                "threshold": 0.93,
                "declared": 120,
                "coverage": 0.6,
                "agreement": 0.95,
                "labelled": 200,
            },
            {
                "tier": 2,
                "judges": ["small-a", "small-b", "large"],
                "weights": {"small-a": 0.4, "small-b": 0.0, "large": 1.6},
                "calibrator": {"slope": 3.1, "intercept": 0.2, "method": "platt", "n": 200},
                "threshold": 0.91,
                "declared": 50,
                "coverage": 0.25,
                "agreement": 0.94,
                "labelled": 80,
            },
        ],
        "labelled_units": 200,
        "calibration_items": 100,
        "coverage": 0.85,
        "agreement": 0.946,
        "guarantee": guarantee_sentence(100, 0.9, 0.1),
        "condition": DEFAULT_CONDITION,
        "source": "judgments.csv + labels.csv",
        "seed": 0,
        "folds": 5,
    }


def test_a_policy_round_trips_through_its_file(tmp_path: Path) -> None:
    policy = Policy.model_validate(policy_data())
    path = write_policy(tmp_path / "out" / "policy.json", policy)
    assert read_policy(path) == policy
    assert json.loads(path.read_text())["format"] == "debate-policy/1"
    assert isinstance(policy.tiers[0].calibrator, Platt)
    assert debate.read_policy is read_policy and debate.Policy is Policy
    assert debate.TierPolicy is TierPolicy


def test_the_guarantee_sentence() -> None:
    assert guarantee_sentence(120, 0.9, 0.1) == (
        "on new items exchangeable with the 120 calibration items, agreement with people's "
        "majority on the verdicts this policy declares is at least 0.9 with probability at "
        "least 0.9"
    )


def test_a_tier_that_declares_nothing_needs_no_threshold_or_calibrator() -> None:
    data = policy_data()
    data["tiers"][1].update(
        threshold=None, calibrator=None, declared=0, coverage=0.0, agreement=None
    )
    data.update(coverage=0.6, agreement=0.95)
    policy = Policy.model_validate(data)
    assert policy.tiers[1].threshold is None


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data))
    return path


def refusal(path: Path) -> ConfigurationError:
    with pytest.raises(ConfigurationError) as caught:
        read_policy(path)
    assert "\n" not in str(caught.value)
    return caught.value


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    error = refusal(tmp_path / "nope.json")
    assert str(error).startswith(f"policy {tmp_path / 'nope.json'}: no such file; check the path")
    assert "debate validity" in str(error) and error.field == "--policy"


def test_a_file_that_is_not_json_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    path.write_text("{not json")
    error = refusal(path)
    assert str(error).startswith(f"policy {path}: not valid JSON (line 1, column 2:")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format": "debate-policy/2"}, "format debate-policy/2 is not one this version reads"),
        ({"format": "something/1"}, "format 'something/1' is not a policy format"),
    ],
)
def test_another_format_or_version_is_refused(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    error = refusal(write(tmp_path / "p.json", {**policy_data(), **change}))
    assert message in str(error) and "write it again with this version's `debate validity" in str(
        error
    )


def test_a_json_file_that_is_not_a_policy_is_refused(tmp_path: Path) -> None:
    for data in ([1, 2], {"kind": "verdicts"}):
        error = refusal(write(tmp_path / "p.json", data))
        assert "not a policy file (no format field)" in str(error)


def tier_change(index: int, **fields: Any) -> dict[str, Any]:
    data = policy_data()
    data["tiers"][index].update(fields)
    return data


@pytest.mark.parametrize(
    ("data", "where", "message"),
    [
        ({**policy_data(), "target_agreement": 1.2}, "target_agreement", "less than 1"),
        ({**policy_data(), "risk": 0}, "risk", "greater than 0"),
        ({**policy_data(), "kind": "ranks"}, "kind", "'scores' or 'verdicts'"),
        ({**policy_data(), "extra": 1}, "extra", "Extra inputs are not permitted"),
        ({**policy_data(), "tiers": []}, "tiers", "at least 1 item"),
        (tier_change(0, threshold=1.5), "tiers.0.threshold", "less than or equal to 1"),
        (tier_change(0, weights={"small-a": 1.0}), "tiers.0", "one weight per judge"),
        (
            tier_change(0, weights={"small-a": 1.0, "small-b": -1.0}),
            "tiers.0",
            "weights must be finite, 0 or more; small-b",
        ),
        (
            tier_change(0, weights={"small-a": float("inf"), "small-b": 1.0}),
            "tiers.0",
            "weights must be finite, 0 or more; small-a",
        ),
        (tier_change(0, calibrator=None), "tiers.0", "a tier with a threshold needs its"),
        (
            tier_change(0, calibrator={"slope": -1, "intercept": 0, "n": 3}),
            "tiers.0.calibrator.slope",
            "greater than or equal to 0",
        ),
        (tier_change(1, declared=90), "tiers.1", "declared (90) cannot exceed labelled (80)"),
        (tier_change(1, tier=3), "", "tiers must be numbered 1, 2, ... in order; got [1, 3]"),
        (tier_change(1, labelled=70), "", "tiers.1.labelled is 70, but 80 units reach"),
        (tier_change(1, coverage=0.3), "", "tiers.1.coverage is 0.3, but the tier declares 50"),
        (tier_change(1, judges=["large"], weights={"large": 1}), "", "tiers.1.judges must"),
        ({**policy_data(), "coverage": 0.5}, "", "coverage is 0.5, but the tiers declare 170"),
        ({**policy_data(), "dimension": "logic"}, "", "dimension is for score tables"),
    ],
)
def test_an_invalid_field_is_refused_naming_it(
    tmp_path: Path, data: dict[str, Any], where: str, message: str
) -> None:
    path = write(tmp_path / "p.json", data)
    error = refusal(path)
    prefix = f"policy {path}" + (f".{where}" if where else "")
    assert str(error).startswith(prefix + ": "), str(error)
    assert message in str(error)
    assert str(error).endswith(
        "; write the policy again with `debate validity TABLE --labels L --target-agreement T "
        "--risk R` rather than editing it"
    )
    assert error.field == (where or None)


def test_the_records_refuse_the_same_things_without_a_file() -> None:
    with pytest.raises(ValidationError, match="a tier with a threshold needs its calibrator"):
        TierPolicy.model_validate(tier_change(0, calibrator=None)["tiers"][0])
    with pytest.raises(ValidationError, match="frozen"):
        policy = Policy.model_validate(policy_data())
        policy.risk = 0.2  # type: ignore[misc]
