from __future__ import annotations

from pathlib import Path

import pytest

from debate.exceptions import ConfigurationError
from debate.topics import TopicProfiles


@pytest.mark.parametrize(
    ("topic", "expected"),
    [
        ("Should we take a brisk approach to hiring?", "default"),
        ("What are the risks of storing card data?", "security"),
        ("Is the ROI of the new pricing worth it?", "business"),
        ("Should we move to Kubernetes and split the monolith?", "architecture"),
        ("Should we adopt microservices?", "architecture"),
        ("Is the costume party a good idea?", "default"),
    ],
)
def test_keywords_match_on_word_boundaries(topic: str, expected: str) -> None:
    assert TopicProfiles.load().detect(topic) == expected


def test_replaced_profile_file_changes_the_type(tmp_path: Path) -> None:
    table = tmp_path / "topics.toml"
    table.write_text(
        "[default.weights]\ntechnical = 0.25\nbusiness = 0.25\nrisk = 0.25\ngeneral = 0.25\n"
        '[legal]\nkeywords = ["contract", "GDPR"]\n'
        "[legal.weights]\ntechnical = 0.1\nbusiness = 0.2\nrisk = 0.5\ngeneral = 0.2\n"
    )
    profiles = TopicProfiles.load(table)
    assert profiles.detect("Does the contract satisfy gdpr?") == "legal"
    assert profiles.domain_weight("legal", "risk", 4) == 0.5


def test_profile_without_default_is_refused(tmp_path: Path) -> None:
    table = tmp_path / "topics.toml"
    table.write_text('[legal]\nkeywords = ["x"]\n[legal.weights]\nrisk = 1.0\n')
    with pytest.raises(ConfigurationError, match="default.weights"):
        TopicProfiles.load(table)
