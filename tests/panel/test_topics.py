from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from debate import FunctionModel, MultiJudgePanel, RunConfig
from debate.exceptions import ConfigurationError
from debate.models import Message
from debate.panel import TopicProfiles
from tests.support.helpers import planted_judges, transcript


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


def _panel_with_classifier(answer: str) -> tuple[MultiJudgePanel, FunctionModel]:
    judge = planted_judges(lambda role, arg: 7 if arg.startswith("PRO") else 5)

    def reply(messages: list[Message], schema: type[BaseModel]) -> str:
        if schema.__name__ == "TopicChoice":
            assert "<<proposition:" in messages[0].content  # the topic enters as data
            return answer
        return judge(messages, schema)

    model = FunctionModel(reply, name="fn")
    config = RunConfig(model="fn", topic_classifier="model", max_retries=0)
    return MultiJudgePanel(models=model, config=config), model


def test_model_classifier_sets_the_topic_type_in_one_small_call() -> None:
    panel, model = _panel_with_classifier('{"topic_type": "security"}')
    topic = "Should the bakery open on Sundays?"  # no keyword: the table says "default"
    assert TopicProfiles.load().detect(topic) == "default"
    result = panel.evaluate_sync(transcript(topic=topic), seed=1)
    assert (result.vote.topic_type, result.vote.topic_source) == ("security", "model")
    assert result.vote.judge_weights == panel.judge_weights("security")
    topic_calls = [c for c in result.usage.per_call if c.phase == "topic"]
    assert len(topic_calls) == 1 and topic_calls[0].ok
    choice = next(schema for _, schema in model.requests if schema.__name__ == "TopicChoice")
    enum = choice.model_json_schema()["properties"]["topic_type"]["enum"]
    assert enum == ["default", "architecture", "business", "security"]


def test_failed_classifier_falls_back_to_keywords_and_says_so() -> None:
    panel, _ = _panel_with_classifier('{"topic_type": "astrology"}')
    result = panel.evaluate_sync(transcript(topic="What are the risks of the plan?"), seed=1)
    assert (result.vote.topic_type, result.vote.topic_source) == ("security", "keywords_fallback")
    assert [e.status for e in result.evaluations] == ["scored"] * 4


def test_topic_type_set_by_hand_wins_without_a_call() -> None:
    model = FunctionModel(planted_judges(lambda role, arg: 6), name="fn")
    config = RunConfig(model="fn", topic_classifier="model", topic_type="business")
    result = MultiJudgePanel(models=model, config=config).evaluate_sync(transcript(), seed=1)
    assert (result.vote.topic_type, result.vote.topic_source) == ("business", "config")
    assert not [c for c in result.usage.per_call if c.phase == "topic"]
