"""debate: structured LLM debates judged by a calibrated panel of role-specialised judges.

The panel declares a winner only when its agreement is strong enough to trust; otherwise it
says, with reasons, that the judges do not agree or that the debate is too close to call.

Everything a user needs is importable from here; the stage folders (``debate.records``,
``debate.runtime``, ``debate.panel``, ``debate.judgments``, ...) keep their modules private and
declare their face in ``__init__`` (``__all__``), and every name here is taken from a face.
``debate.stats`` (pure agreement and aggregation statistics) and ``debate.report``
(renderers) are public too.
Every name is imported on first use (``debate.run_debate`` imports :mod:`debate.api`), so that
``import debate`` loads neither the ``openai`` SDK, nor llama.cpp, nor scipy before a command
needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from debate._version import __version__
from debate.exceptions import (
    BudgetExceeded,
    ConfigurationError,
    DeadlineExceeded,
    DebateError,
    DebaterError,
    ModelOutputError,
    ProviderError,
)

if TYPE_CHECKING:
    from debate import report as report
    from debate import stats as stats
    from debate.api import (
        judge_transcript,
        judge_transcript_sync,
        load_transcript,
        run_debate,
        run_debate_sync,
        write_result,
    )
    from debate.batch import BatchItem, load_batch, run_batch
    from debate.council import escalate_on_tied_top, load_candidates, run_council, run_council_sync
    from debate.judgments import (
        Decided,
        TrackRecords,
        Validity,
        ValidityReport,
        decide_judgments,
        read_judgments,
        validate_judgments,
        write_judgments,
    )
    from debate.models import (
        FunctionModel,
        Message,
        Model,
        ModelSettings,
        Reply,
        ScriptedModel,
        TestModel,
        TokenUsage,
    )
    from debate.models.local import LocalModel
    from debate.models.openai import OpenAIModel
    from debate.panel import (
        Escalation,
        EscalationRule,
        MultiJudgePanel,
        PolicyRule,
        ask_every_tier,
        escalate_unless_winner,
    )
    from debate.records import (
        Agreement,
        Argument,
        Candidate,
        Cascade,
        Closing,
        CouncilResult,
        CrossExamination,
        DebateResult,
        DecideSummary,
        Decision,
        Diagnostics,
        ItemDecision,
        JudgeEvaluation,
        JudgeSpec,
        PanelResult,
        Policy,
        RubricScore,
        RunConfig,
        Scale,
        ScoreTable,
        Thresholds,
        TierPolicy,
        TierStep,
        Transcript,
        Usage,
        VerdictTable,
        Vote,
        default_judges,
        load_config,
    )
    from debate.report import charts, render_html, render_markdown, write_report
    from debate.runtime import (
        Budget,
        Event,
        EventHandler,
        ModelPool,
        PanelPreset,
        PriceTable,
        RateLimiter,
        Run,
        StepFinished,
        StepStarted,
        list_presets,
        panel_preset,
    )
    from debate.storage import ResponseCache, load_result, read_policy, write_policy

_MODULES: dict[str, tuple[str, ...]] = {
    "debate.api": (
        "judge_transcript",
        "judge_transcript_sync",
        "load_transcript",
        "run_debate",
        "run_debate_sync",
        "write_result",
    ),
    "debate.batch": (
        "BatchItem",
        "load_batch",
        "run_batch",
    ),
    "debate.council": (
        "escalate_on_tied_top",
        "load_candidates",
        "run_council",
        "run_council_sync",
    ),
    "debate.judgments": (
        "Decided",
        "TrackRecords",
        "Validity",
        "ValidityReport",
        "decide_judgments",
        "read_judgments",
        "validate_judgments",
        "write_judgments",
    ),
    "debate.models": (
        "FunctionModel",
        "Message",
        "Model",
        "ModelSettings",
        "Reply",
        "ScriptedModel",
        "TestModel",
        "TokenUsage",
    ),
    "debate.models.local": ("LocalModel",),
    "debate.models.openai": ("OpenAIModel",),
    "debate.panel": (
        "Escalation",
        "EscalationRule",
        "MultiJudgePanel",
        "PolicyRule",
        "ask_every_tier",
        "escalate_unless_winner",
    ),
    "debate.records": (
        "Agreement",
        "Argument",
        "Candidate",
        "Cascade",
        "Closing",
        "CouncilResult",
        "CrossExamination",
        "DebateResult",
        "DecideSummary",
        "Decision",
        "Diagnostics",
        "ItemDecision",
        "JudgeEvaluation",
        "JudgeSpec",
        "PanelResult",
        "Policy",
        "RubricScore",
        "RunConfig",
        "Scale",
        "ScoreTable",
        "Thresholds",
        "TierPolicy",
        "TierStep",
        "Transcript",
        "Usage",
        "VerdictTable",
        "Vote",
        "default_judges",
        "load_config",
    ),
    "debate.report": (
        "charts",
        "render_html",
        "render_markdown",
        "write_report",
    ),
    "debate.runtime": (
        "Budget",
        "Event",
        "EventHandler",
        "ModelPool",
        "PanelPreset",
        "PriceTable",
        "RateLimiter",
        "Run",
        "StepFinished",
        "StepStarted",
        "list_presets",
        "panel_preset",
    ),
    "debate.storage": (
        "ResponseCache",
        "load_result",
        "read_policy",
        "write_policy",
    ),
}
"""Where each public name lives; the TYPE_CHECKING imports above say the same to mypy."""

_LAZY = {name: module for module, names in _MODULES.items() for name in names}
_SUBPACKAGES = ("report", "stats")
"""Public subpackages, reachable as ``debate.stats`` after a bare ``import debate``."""


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use (PEP 562).

    ``import debate`` (and with it every ``debate`` command, whose modules live in this
    package) then loads only what is used: a CLI command does not pay for the statistics
    of validity reports, the service or the ``openai`` SDK unless it runs them.
    """
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in _SUBPACKAGES:
        value = importlib.import_module(f"debate.{name}")
    else:
        raise AttributeError(f"module 'debate' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names, imported or not."""
    return sorted({*globals(), *__all__, *_SUBPACKAGES})


__all__ = [
    "Agreement",
    "Argument",
    "BatchItem",
    "Budget",
    "BudgetExceeded",
    "Candidate",
    "Cascade",
    "Closing",
    "ConfigurationError",
    "CouncilResult",
    "CrossExamination",
    "DeadlineExceeded",
    "DebateError",
    "DebateResult",
    "DebaterError",
    "DecideSummary",
    "Decided",
    "Decision",
    "Diagnostics",
    "Escalation",
    "EscalationRule",
    "Event",
    "EventHandler",
    "FunctionModel",
    "ItemDecision",
    "JudgeEvaluation",
    "JudgeSpec",
    "LocalModel",
    "Message",
    "Model",
    "ModelOutputError",
    "ModelPool",
    "ModelSettings",
    "MultiJudgePanel",
    "OpenAIModel",
    "PanelPreset",
    "PanelResult",
    "Policy",
    "PolicyRule",
    "PriceTable",
    "ProviderError",
    "RateLimiter",
    "Reply",
    "ResponseCache",
    "RubricScore",
    "Run",
    "RunConfig",
    "Scale",
    "ScoreTable",
    "ScriptedModel",
    "StepFinished",
    "StepStarted",
    "TestModel",
    "Thresholds",
    "TierPolicy",
    "TierStep",
    "TokenUsage",
    "TrackRecords",
    "Transcript",
    "Usage",
    "Validity",
    "ValidityReport",
    "VerdictTable",
    "Vote",
    "__version__",
    "ask_every_tier",
    "charts",
    "decide_judgments",
    "default_judges",
    "escalate_on_tied_top",
    "escalate_unless_winner",
    "judge_transcript",
    "judge_transcript_sync",
    "list_presets",
    "load_batch",
    "load_candidates",
    "load_config",
    "load_result",
    "load_transcript",
    "panel_preset",
    "read_judgments",
    "read_policy",
    "render_html",
    "render_markdown",
    "run_batch",
    "run_council",
    "run_council_sync",
    "run_debate",
    "run_debate_sync",
    "validate_judgments",
    "write_judgments",
    "write_policy",
    "write_report",
    "write_result",
]
