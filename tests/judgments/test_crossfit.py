"""Cross-fitting on planted panels: judges of known accuracy, one adversarial.

The weights learned from people (on the other folds) and the weights learned from agreement
alone must both recover the ranking of the judges; the gated panel's accuracy on the items
where it declares a verdict must beat the best single judge at the same coverage; and no
judge weight used for an item may have seen that item's label.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy.stats import spearmanr

from debate.exceptions import ConfigurationError
from debate.judgments import planted_scores, planted_verdicts
from debate.judgments._crossfit import cross_fit, fold_of_items
from debate.judgments._decide import select_judges, validate_judgments
from debate.records import NO_CALL, Calls, DecisionFrame

ACCURACY = {"sharp": 0.85, "good": 0.75, "fair": 0.68, "weak": 0.6, "adversary": 0.2}
NOISE = {"sharp": 0.6, "good": 0.75, "fair": 0.9, "weak": 1.2}


def declared_accuracy(calls: Calls, label: np.ndarray) -> tuple[float, float]:
    """Accuracy on declared, labelled units, and coverage of the labelled units."""
    labelled = label != NO_CALL
    declared = calls.declared & labelled
    return float((calls.call[declared] == label[declared]).mean()), float(
        declared.sum() / labelled.sum()
    )


def at_coverage(calls: Calls, label: np.ndarray, coverage: float) -> float:
    """A single judge's accuracy on its most confident ``coverage`` share of labelled units."""
    labelled = np.flatnonzero((label != NO_CALL) & calls.declared)
    take = max(1, round(coverage * int((label != NO_CALL).sum())))
    order = labelled[np.argsort(-calls.confidence[labelled], kind="stable")][:take]
    return float((calls.call[order] == label[order]).mean())


def best_judge(frame: DecisionFrame) -> str:
    labelled = frame.label != NO_CALL
    return max(
        frame.judges,
        key=lambda j: float((frame.judges[j].call[labelled] == frame.label[labelled]).mean()),
    )


def mean_weights(frame: DecisionFrame, weighting: str) -> dict[str, float]:
    folds = frame.weights_by_fold[weighting]
    return {j: float(np.mean([w[j] for w in folds])) for j in folds[0]}


@pytest.fixture(scope="module")
def verdict_frame() -> DecisionFrame:
    judged, people = planted_verdicts(3000, ACCURACY, people=3, people_accuracy=0.9, seed=3)
    return cross_fit(judged, people, folds=5, seed=0)


@pytest.fixture(scope="module")
def score_frame() -> DecisionFrame:
    judged, people = planted_scores(
        2000, ("x", "y"), {**NOISE, "adversary": 0.6}, people=3, seed=4, adversarial={"adversary"}
    )
    return cross_fit(judged, people, folds=5, seed=0)


@pytest.mark.parametrize("weighting", ["labels", "latent"])
def test_verdict_weights_recover_the_ranking_of_judges(
    verdict_frame: DecisionFrame, weighting: str
) -> None:
    weights = mean_weights(verdict_frame, weighting)
    honest = [j for j in ACCURACY if j != "adversary"]
    rho = spearmanr([ACCURACY[j] for j in honest], [weights[j] for j in honest]).statistic
    assert rho == pytest.approx(1.0), weights
    assert weights["adversary"] == 0.0, weights
    assert min(weights[j] for j in honest) > 0


@pytest.mark.parametrize("weighting", ["labels", "latent"])
def test_score_weights_recover_the_ranking_of_judges(
    score_frame: DecisionFrame, weighting: str
) -> None:
    weights = mean_weights(score_frame, weighting)
    rho = spearmanr([-NOISE[j] for j in NOISE], [weights[j] for j in NOISE]).statistic
    assert rho == pytest.approx(1.0), weights
    assert weights["adversary"] == 0.0, weights


@pytest.mark.parametrize("frame_name", ["verdict_frame", "score_frame"])
@pytest.mark.parametrize("weighting", ["labels", "latent"])
def test_the_gated_panel_beats_the_best_judge_at_equal_coverage(
    request: pytest.FixtureRequest, frame_name: str, weighting: str
) -> None:
    frame: DecisionFrame = request.getfixturevalue(frame_name)
    accuracy, coverage = declared_accuracy(frame.methods[weighting], frame.label)
    assert 0.2 < coverage < 1.0, "the gate abstains on some items and declares on others"
    single = at_coverage(frame.judges[best_judge(frame)], frame.label, coverage)
    assert accuracy > single + 0.02, (accuracy, coverage, single)


def test_no_weight_used_for_an_item_saw_its_label() -> None:
    """Flip people's labels on fold 0's items: fold 0's weights do not move; others do."""
    judged, people = planted_verdicts(1500, ACCURACY, people=3, people_accuracy=0.95, seed=5)
    before = cross_fit(judged, people, folds=5, seed=11)
    fold = fold_of_items(len(judged.items), 5, 11)
    in_fold0 = np.isin(people.item, np.flatnonzero(fold == 0))
    flipped = people.verdict.copy()
    flipped[in_fold0 & (people.verdict < 2)] = 1 - flipped[in_fold0 & (people.verdict < 2)]
    after = cross_fit(judged, replace(people, verdict=flipped), folds=5, seed=11)
    assert before.weights_by_fold["labels"][0] == after.weights_by_fold["labels"][0]
    assert all(
        before.weights_by_fold["labels"][k] != after.weights_by_fold["labels"][k]
        for k in range(1, 5)
    )
    # Latent weights never read a label at all.
    assert before.weights_by_fold["latent"] == after.weights_by_fold["latent"]
    # And fold 0's decisions with label-trained weights are the same.
    zero = before.fold == 0
    assert (before.methods["labels"].call[zero] == after.methods["labels"].call[zero]).all()


def test_items_are_never_split_across_folds(score_frame: DecisionFrame) -> None:
    for g in np.unique(score_frame.group):
        assert np.unique(score_frame.fold[score_frame.group == g]).size == 1


def test_people_in_the_same_file_give_the_same_frame() -> None:
    judged, people = planted_verdicts(400, ACCURACY, people=3, seed=6)
    separate = validate_judgments(judged, people, folds=4, n_boot=50)
    assert select_judges(judged, ["sharp"], keep=True).judges == ("sharp",)
    merged = _merge(judged, people)
    together = validate_judgments(merged, people=list(people.judges), folds=4, n_boot=50)
    assert (separate.frame.label == together.frame.label).all()
    assert separate.frame.weights_by_fold == together.frame.weights_by_fold


def _merge(judged, people):  # type: ignore[no-untyped-def]
    """One verdict table holding the judges' rows and the people's rows."""
    offset = len(judged.judges)
    index = {name: i for i, name in enumerate(judged.items)}
    people_items = np.array([index[people.items[i]] for i in people.item], dtype=np.int32)
    return replace(
        judged,
        judges=judged.judges + people.judges,
        item=np.concatenate([judged.item, people_items]),
        judge=np.concatenate([judged.judge, people.judge + offset]).astype(np.int32),
        verdict=np.concatenate([judged.verdict, people.verdict]),
        order=np.concatenate([judged.order, people.order]),
    )


def test_to_dataframe_gives_every_row_or_names_the_extra() -> None:
    judged, people = planted_verdicts(120, ACCURACY, people=3, seed=7)
    validity = validate_judgments(judged, people, folds=3, n_boot=20)
    rows = len(validity.frame.group) * (len(validity.frame.methods) + len(validity.frame.judges))
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigurationError, match=r'pip install -e "\.\[pandas\]"'):
            validity.to_dataframe()
    else:
        assert len(validity.to_dataframe()) == rows
