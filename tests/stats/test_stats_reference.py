"""Every published value and edge case of the reference file, at its tolerance."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from debate.stats import fleiss_kappa, fleiss_kappa_from_labels, krippendorff_alpha
from tests.support import DATA, ROOT

SHARED = ROOT.parent / "shared" / "reference" / "agreement_cases.json"
COPY = DATA / "agreement_cases.json"
CASES: list[dict[str, Any]] = json.loads((SHARED if SHARED.exists() else COPY).read_text())["cases"]


def _value(case: dict[str, Any]) -> float:
    if case["kind"] == "alpha":
        return krippendorff_alpha(case["data"], case["metric"], case.get("value_domain"))
    if "table" in case:
        return fleiss_kappa(case["table"], case.get("method", "fleiss"))
    return fleiss_kappa_from_labels(case["labels"])


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_reference_case(case: dict[str, Any]) -> None:
    if case.get("variant") == "gwet2014_missing":
        pytest.skip(
            "Gwet's missing-data generalisation of Fleiss' kappa is not implemented; "
            "use krippendorff_alpha(level='nominal') for missing ratings"
        )
    value = _value(case)
    if case["expected"] is None:
        assert math.isnan(value)
    else:
        assert value == pytest.approx(case["expected"], abs=case["tolerance"])
    if case.get("published") is not None:
        assert value == pytest.approx(case["published"], abs=case["published_tolerance"])


def test_reference_file_copy_matches_shared() -> None:
    if not SHARED.exists():
        pytest.skip("shared/ is not beside the checkout")
    assert json.loads(SHARED.read_text()) == json.loads(COPY.read_text())


def test_the_reference_articles_alpha_is_wrong_and_ours_is_not() -> None:
    """The four Krippendorff 2011 values the issue quotes."""
    data = next(c for c in CASES if c["id"] == "k2011_nominal")["data"]
    got = [krippendorff_alpha(data, level) for level in ("nominal", "ordinal", "interval", "ratio")]
    assert got == pytest.approx([0.743, 0.815, 0.849, 0.797], abs=5e-4)
