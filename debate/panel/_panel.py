"""The multi-judge panel: every judge evaluates the transcript concurrently, then decide.

Each judge's request starts with the same bytes (the common instructions, the proposition
and the transcript) and ends with its role, so provider prefix caches and llama.cpp's
prefix reuse apply across judges.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from debate.exceptions import ConfigurationError
from debate.models import Message, Model, ModelSettings
from debate.panel._cascade import (
    EscalationRule,
    Tier,
    escalate_unless_winner,
    run_cascade,
    tiers_of,
)
from debate.panel._identity import identity
from debate.panel._positions import Presentation, presentations
from debate.panel._topic_classifier import classify_topic
from debate.panel._topics import TopicProfiles
from debate.records import (
    SIDES,
    JudgeEvaluation,
    JudgeSpec,
    PanelResult,
    RunConfig,
    TopicSource,
    Transcript,
    draw_seed,
    samples_of,
)
from debate.runtime import (
    CallContext,
    Deadline,
    PromptRenderer,
    Run,
    UsageMeter,
    run_settings,
)

if TYPE_CHECKING:
    from debate.panel._judge import Sitting
    from debate.stats import Method as CalibrationMethod

# The judging, the decision and the statistics (numpy) are imported where a panel first
# evaluates, not here: a run builds its panel, checking the judges, before its first model
# call, and the imports then wait for the debaters' replies instead of delaying the first.

logger = logging.getLogger(__name__)

HISTORY_WEIGHT = 0.3
DOMAIN_WEIGHT = 0.7
_LEGACY = ("on_event", "history", "cache")
"""The fields of ``Run`` the panel took one by one before it took ``run``."""


class MultiJudgePanel:
    """A panel of role-specialised judges.

    Args:
        judges: The judges (default: the run config's, i.e. the four default roles).
        models: One model for every judge, or a mapping from judge name to model.
        config: Thresholds, calibration, sampling and retry settings.
        renderer: Prompt templates (default: the shipped ones, or ``config.templates``).
        topics: Topic profiles (default: the shipped table, or ``config.topics``).
        escalation: When to ask the judges of the next tier (:mod:`debate.panel._cascade`);
            default: when the judges asked so far declared no winner. Without tiers (every
            judge in tier 1) it is consulted once and its reason recorded.
        run: The machinery shared with other runs (:class:`~debate.runtime._run.Run`); the
            panel reads its progress callback (``on_event``), its track records
            (``history``: accuracy by judge identity, :meth:`identity`; judges without one
            count as 1.0) and its response cache (``cache``: a judge's valid reply is
            replayed from it, and stored in it). Its models are given in ``models``.
        **legacy: Deprecated: ``on_event=``, ``history=`` and ``cache=`` given one by one;
            they still work, with a DeprecationWarning.
    """

    def __init__(
        self,
        judges: Sequence[JudgeSpec] | None = None,
        *,
        models: Model | Mapping[str, Model],
        config: RunConfig | None = None,
        renderer: PromptRenderer | None = None,
        topics: TopicProfiles | None = None,
        escalation: EscalationRule[PanelResult] | None = None,
        run: Run | None = None,
        **legacy: Any,
    ) -> None:
        run = Run.of(run, legacy, "MultiJudgePanel", took=_LEGACY)
        base = config or RunConfig()
        self.history = dict(run.history or {})
        if judges is not None:
            base = base.model_copy(update={"judges": list(judges)})
            RunConfig.model_validate(base.model_dump())  # re-check the panel size and names
        self.config = base
        self.judges = [j for j in base.judges if not j.standby]
        """The regular judges: asked tier by tier."""
        self.standbys = [j for j in base.judges if j.standby]
        """Asked only to replace a regular judge that ended unscored, in this order."""
        self.renderer = renderer or PromptRenderer.for_run(base)
        self.topics = topics or TopicProfiles.load(base.topics)
        self.on_event = run.on_event
        self.cache = run.cache
        self.escalation: EscalationRule[PanelResult] = escalation or escalate_unless_winner
        self.models = self._bind_models(models)
        for spec in self._everyone():
            template = f"judge_role_{spec.role}.md.jinja"
            if not self.renderer.has(template):
                raise ConfigurationError(
                    f"judges: unknown judge role {spec.role!r} (no template {template}); "
                    "use technical, business, risk or general, or add that template"
                )

    def _bind_models(self, models: Model | Mapping[str, Model]) -> dict[str, Model]:
        if isinstance(models, Mapping):
            missing = [j.name for j in self._everyone() if j.name not in models]
            if missing:
                raise ConfigurationError(
                    f"models: no model for judge(s) {', '.join(missing)}; map every judge name"
                )
            return {j.name: models[j.name] for j in self._everyone()}
        return {j.name: models for j in self._everyone()}

    def _everyone(self) -> list[JudgeSpec]:
        """Regular judges and standbys."""
        return [*self.judges, *self.standbys]

    async def _topic(
        self, topic: str, settings: ModelSettings, call: CallContext, renderer: PromptRenderer
    ) -> tuple[str, TopicSource]:
        """The type set by hand, else the keyword table's or the model classifier's."""
        if self.config.topic_type:
            return self.config.topic_type, "config"
        if self.config.topic_classifier == "keywords":
            return self.topics.detect(topic), "keywords"
        return await classify_topic(
            topic,
            self.topics,
            self.models[self._first().name],
            renderer=renderer,
            settings=settings,
            call=call,
        )

    def identity(self, spec: JudgeSpec) -> str:
        """The key of this judge's track record: role x model x template version."""
        return identity(spec.role, self.models[spec.name].name, self.renderer)

    def _first(self) -> JudgeSpec:
        """The first judge of the lowest tier: the cheapest, so it classifies the topic."""
        return min(self.judges, key=lambda j: j.tier)

    def judge_weights(
        self, topic_type: str, judges: Sequence[JudgeSpec] | None = None
    ) -> dict[str, float]:
        """0.7 x domain weight + 0.3 x historical accuracy (1.0 without history).

        ``judges``: the judges a decision rests on (default all; the tiers asked so far in
        a cascade), whose number is the panel size a custom role's equal share divides by.
        """
        chosen = self.judges if judges is None else list(judges)
        return {
            j.name: DOMAIN_WEIGHT * self.topics.domain_weight(topic_type, j.role, len(chosen))
            + HISTORY_WEIGHT * self.history.get(self.identity(j), 1.0)
            for j in chosen
        }

    def presentations(self, transcript: Transcript, seed: int) -> list[Presentation]:
        """Each judge's reading order, drawn from the run's seed.

        Counterbalanced within each tier (tier 1 from the draw a panel without tiers makes),
        so the judges asked so far are balanced whichever tier the cascade stops at.
        """
        pro = [a.id for a in transcript.side_arguments("PRO")]
        con = [a.id for a in transcript.side_arguments("CON")]
        orders: dict[str, Presentation] = {}
        for tier in self._tiers():
            key = f"{seed}:presentation" + ("" if tier.number == 1 else f":tier{tier.number}")
            drawn = presentations(
                len(tier.members),
                pro,
                con,
                rng=random.Random(key),
                mode=self.config.presentation,
            )
            orders.update(zip(tier.members, drawn, strict=True))
        return [orders[j.name] for j in self.judges]

    def _further(
        self, transcript: Transcript, seed: int, first: dict[str, Presentation]
    ) -> dict[str, list[Presentation]]:
        """Per judge, the orders of its repeated readings (none without ``samples``)."""
        counts = {j.name: samples_of(j, self.config.samples) for j in self.judges}
        if max(counts.values()) == 1:
            return {name: [] for name in first}
        from debate.panel._samples import further_presentations

        return further_presentations(
            self._tiers(), first, counts, transcript, seed, self.config.presentation
        )

    def _tiers(self) -> list[Tier]:
        """The panel's tiers, lowest first (one without tiers)."""
        # K readings each, and the swap check's mirror of the first (a judge's own samples
        # are not counted here: a tier's count is an estimate for the tiers not asked)
        readings = self.config.samples + (1 if self.config.swap else 0)
        return tiers_of([(j.name, j.tier) for j in self.judges], readings)

    async def evaluate(
        self,
        transcript: Transcript,
        *,
        seed: int | None = None,
        meter: UsageMeter | None = None,
        deadline: Deadline | None = None,
    ) -> PanelResult:
        """Run the judges concurrently on ``transcript``, tier by tier, and decide.

        Without tiers every judge is asked at once. With tiers, the judges of one tier are
        asked together, and the next tier only when the escalation rule says the decision
        on the tiers so far is not confident enough (:mod:`debate.panel._cascade`); the
        result's ``cascade`` says which tiers were asked and why. Judges still running
        when ``deadline`` passes are recorded as unscored (timeout). Without a seed one is
        drawn; it is returned in the result so the run can be replayed.
        """
        seed = draw_seed(seed)
        sitting = self._sitting(transcript, seed, meter, deadline)
        topic = await self._topic(
            transcript.topic, sitting.settings, sitting.call, sitting.renderer
        )
        shown = self.presentations(transcript, seed)
        orders = {j.name: order for j, order in zip(self.judges, shown, strict=True)}
        hearing = _Hearing(
            self, sitting, topic, seed, orders, self._further(transcript, seed, orders)
        )
        result, cascade = await run_cascade(
            self._tiers(), hearing.ask, hearing.conclude, self.escalation, sitting.call.meter
        )
        result = result.model_copy(update={"cascade": cascade})
        if self.config.deliberation.rounds:
            from debate.panel._deliberation import deliberate

            tier = result.decision.tier
            result = await deliberate(
                sitting,
                result,
                specs={j.name: j for j in self._everyone()},
                models=self.models,
                orders=orders,
                rounds=self.config.deliberation.rounds,
                calibration=self.calibration(transcript),
                redecide=lambda revised: hearing.conclude(tier, revised),
            )
        return result

    def _sitting(
        self, transcript: Transcript, seed: int, meter: UsageMeter | None, deadline: Deadline | None
    ) -> Sitting:
        """What every judge of this evaluation shares; the seed keys its prompts' rendering."""
        from debate.panel._judge import Sitting

        renderer = self.renderer.keyed(seed)  # the same seed renders the same prompts
        return Sitting(
            transcript=transcript,
            system=Message(role="system", content=renderer.render("judge_system.md.jinja")),
            settings=run_settings(self.config, seed),
            renderer=renderer,
            call=CallContext.of(self.config, meter, self.cache, self.on_event),
            deadline=deadline or Deadline(self.config.deadline),
            swap=self.config.swap,
        )

    def _standby_spec(self, name: str) -> JudgeSpec:
        return next(j for j in self.standbys if j.name == name)

    async def _stand_in(
        self,
        sitting: Sitting,
        failed: JudgeEvaluation,
        spare: list[JudgeSpec],
        order: Presentation,
        more: Sequence[Presentation] = (),
    ) -> list[JudgeEvaluation]:
        """Standbys asked in place of ``failed``, until one scores or none is left.

        Each takes the next unused standby (taken from ``spare`` before its call, so two
        failed judges never get the same one) and reads the debate in the failed judge's
        order, keeping the panel's counterbalancing. The failed judge stays unscored and
        recorded; each standby's evaluation says whom it replaced and why. With repeated
        readings a standby reads in the failed judge's orders (``more``) too.
        """
        from debate.panel._judge import evaluate_judge

        asked: list[JudgeEvaluation] = []
        why: str = failed.reason or "unscored"
        if failed.detail:
            why = f"{why} ({failed.detail})"
        while spare:
            spec = spare.pop(0)
            logger.info(
                "judge %s is unscored (%s); asking standby %s", failed.judge, why, spec.name
            )
            found = await evaluate_judge(sitting, spec, self.models[spec.name], order, more)
            asked.append(
                found.model_copy(update={"standby_for": failed.judge, "standby_reason": why})
            )
            if found.status == "scored":
                break
        return asked

    def calibration(self, transcript: Transcript) -> CalibrationMethod:
        """The configured calibration, or the one ``auto`` picks for this many arguments."""
        if self.config.calibration != "auto":
            return self.config.calibration
        from debate.stats import choose_calibration

        return choose_calibration(max(len(transcript.side_arguments(s)) for s in SIDES))

    async def _conclude(
        self,
        sitting: Sitting,
        evaluations: list[JudgeEvaluation],
        judges: list[JudgeSpec],
        topic: tuple[str, TopicSource],
        seed: int,
        tier: int,
        panel_size: int | None = None,
    ) -> PanelResult:
        """From the evaluations of ``judges`` (tiers 1 to ``tier``) to the decision.

        ``judges`` includes any standbys asked in place of a failed judge; ``panel_size``
        is the regular judges asked (default: every judge given).
        """
        from debate.panel._decision import Context, Setting, batch_of, score_matrices
        from debate.panel._gather import concluded
        from debate.panel._samples import consistent_weights

        transcript = sitting.transcript
        scored = [e for e in evaluations if e.status == "scored"]
        matrices = score_matrices(transcript, scored, {j.name: j.weights for j in judges})
        setting = Setting(
            thresholds=self.config.thresholds,
            calibration=self.calibration(transcript),
            seed=seed,
            topic_type=topic[0],
            topic_source=topic[1],
        )
        context = Context(
            panel_size=len(judges) if panel_size is None else panel_size,
            unscored=len(evaluations) - len(scored),
            evaluations=evaluations,
        )
        agreement, vote_, _, decision = await concluded(
            batch_of(matrices),
            consistent_weights(self.judge_weights(topic[0], judges), evaluations),
            setting,
            context,
        )
        if agreement.warning is not None:
            logger.warning("%s", agreement.warning)
        return PanelResult(
            evaluations=evaluations,
            agreement=agreement,
            vote=vote_,
            decision=decision.model_copy(update={"tier": tier}),
            usage=sitting.call.meter.snapshot(),
            seed=seed,
        )

    def evaluate_sync(self, transcript: Transcript, *, seed: int | None = None) -> PanelResult:
        """Blocking wrapper of :meth:`evaluate` for scripts."""
        return asyncio.run(self.evaluate(transcript, seed=seed))


@dataclass
class _Hearing:
    """One evaluation in progress: what the tiers asked so far returned, and the decision.

    The cascade asks tier by tier (:meth:`ask`) and decides on the tiers so far
    (:meth:`conclude`); deliberation decides again on revised scores through the same
    :meth:`conclude`, so both count the judges and standbys alike.
    """

    panel: MultiJudgePanel
    sitting: Sitting
    topic: tuple[str, TopicSource]
    seed: int
    orders: dict[str, Presentation]
    """Each regular judge's reading order (a standby reads in its failed judge's)."""
    further: dict[str, list[Presentation]]
    """Each regular judge's repeated readings' orders."""
    done: dict[str, JudgeEvaluation] = field(default_factory=dict)
    stood_in: dict[str, list[JudgeEvaluation]] = field(default_factory=dict)
    """Per regular judge: the standbys asked in its place, in order."""
    spare: list[JudgeSpec] = field(init=False)
    """The standbys not asked yet."""

    def __post_init__(self) -> None:
        self.spare = list(self.panel.standbys)

    async def ask(self, tier: Tier) -> None:
        """Ask a tier's judges together, then standbys in place of those left unscored."""
        from debate.panel._judge import evaluate_judge

        panel, specs = self.panel, {j.name: j for j in self.panel.judges}
        evaluations = await asyncio.gather(
            *(
                evaluate_judge(
                    self.sitting, specs[n], panel.models[n], self.orders[n], self.further[n]
                )
                for n in tier.members
            )
        )
        self.done.update(zip(tier.members, evaluations, strict=True))
        failed = [e for e in evaluations if e.status == "unscored"]
        replacements = await asyncio.gather(
            *(
                panel._stand_in(
                    self.sitting, e, self.spare, self.orders[e.judge], self.further[e.judge]
                )
                for e in failed
            )
        )
        for evaluation, found in zip(failed, replacements, strict=True):
            self.stood_in[evaluation.judge] = found

    async def conclude(
        self, tier: int, revised: Mapping[str, JudgeEvaluation] | None = None
    ) -> PanelResult:
        """The decision on tiers 1 to ``tier``; ``revised``: scores after deliberation."""
        panel = self.panel
        asked = [j for j in panel.judges if j.tier <= tier]
        evaluations: list[JudgeEvaluation] = []
        counted: list[JudgeSpec] = []
        for j in asked:
            evaluations.append(self.done[j.name])
            counted.append(j)
            for standby in self.stood_in.get(j.name, []):
                evaluations.append(standby)
                counted.append(panel._standby_spec(standby.judge))
        if revised:  # after deliberation: the same judges, their final scores
            evaluations = [revised.get(e.judge, e) for e in evaluations]
        decided = await panel._conclude(
            self.sitting, evaluations, counted, self.topic, self.seed, tier, len(asked)
        )
        from debate.panel._selective import PolicyRule

        # Under a policy, each tier's decision is its ruling: winner or escalate.
        if isinstance(panel.escalation, PolicyRule):
            decided = panel.escalation.settle(decided, tier)
        return decided
