"""The call runtime: prompts, reply schemas, one `ask` per call, deadline, events, pool, `Run`.

Backends (:mod:`debate.models`) move bytes; everything that turns a reply into a typed object,
re-asks, counts usage or decides what is cached happens here, with the model pool (cache and
rate limiter) and pricing.
"""

from __future__ import annotations

from debate.runtime._ask import (
    CallContext,
    CallPolicy,
    UsageMeter,
    ask,
    run_settings,
    total_usage,
)
from debate.runtime._budget import MAX_BUDGET_TOKENS, Budget, Ledger
from debate.runtime._deadline import Deadline
from debate.runtime._deliberation_reply import deliberation_reply
from debate.runtime._events import (
    Event,
    EventHandler,
    ItemFinished,
    Phase,
    Planned,
    StepFinished,
    StepStarted,
    event_record,
    planned_calls,
)
from debate.runtime._limiter import RateLimiter, RemoteLimiter
from debate.runtime._pool import ModelPool, closing_pool, no_running_loop, owned_pool
from debate.runtime._presets import (
    PanelPreset,
    PresetJudge,
    describe_preset,
    list_presets,
    load_preset,
    panel_preset,
    preset_text,
)
from debate.runtime._pricing import PriceTable
from debate.runtime._prompts import PromptRenderer, neutralise_markers
from debate.runtime._replies import (
    ArgumentDraft,
    ClosingDraft,
    Commented,
    ExamDraft,
    RubricDraft,
    commentary,
    cut_commentary,
    judge_reply,
    keyed_items,
    keyed_reply,
)
from debate.runtime._run import Run, blocking, closing, given_models

__all__ = [
    "ArgumentDraft",
    "Budget",
    "CallContext",
    "CallPolicy",
    "ClosingDraft",
    "Commented",
    "Deadline",
    "Event",
    "EventHandler",
    "ExamDraft",
    "ItemFinished",
    "Ledger",
    "MAX_BUDGET_TOKENS",
    "ModelPool",
    "PanelPreset",
    "Phase",
    "Planned",
    "PresetJudge",
    "PriceTable",
    "PromptRenderer",
    "RateLimiter",
    "RemoteLimiter",
    "RubricDraft",
    "Run",
    "StepFinished",
    "StepStarted",
    "UsageMeter",
    "ask",
    "blocking",
    "closing",
    "closing_pool",
    "commentary",
    "cut_commentary",
    "deliberation_reply",
    "describe_preset",
    "event_record",
    "given_models",
    "judge_reply",
    "keyed_items",
    "keyed_reply",
    "list_presets",
    "load_preset",
    "neutralise_markers",
    "no_running_loop",
    "owned_pool",
    "panel_preset",
    "planned_calls",
    "preset_text",
    "run_settings",
    "total_usage",
]
