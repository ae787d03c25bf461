"""debate: structured LLM debates judged by a calibrated panel of role-specialised judges.

The panel declares a winner only when its agreement is strong enough to trust; otherwise it
says, with reasons, that the judges do not agree or that the debate is too close to call.
"""

from debate._version import __version__
from debate.api import (
    judge_transcript,
    judge_transcript_sync,
    load_transcript,
    run_debate,
    run_debate_sync,
    write_result,
)
from debate.exceptions import (
    ConfigurationError,
    DebateError,
    DebaterError,
    ModelOutputError,
    ProviderError,
)
from debate.models import FunctionModel, Message, Model, ScriptedModel, TestModel
from debate.panel._panel import MultiJudgePanel
from debate.records._config import JudgeSpec, RunConfig, Thresholds, default_judges, load_config
from debate.records._result import Agreement, DebateResult, Decision, PanelResult, Usage, Vote
from debate.records._transcript import (
    Argument,
    Closing,
    CrossExamination,
    JudgeEvaluation,
    RubricScore,
    Transcript,
)

__all__ = [
    "Agreement",
    "Argument",
    "Closing",
    "ConfigurationError",
    "CrossExamination",
    "DebateError",
    "DebateResult",
    "DebaterError",
    "Decision",
    "FunctionModel",
    "JudgeEvaluation",
    "JudgeSpec",
    "Message",
    "Model",
    "ModelOutputError",
    "MultiJudgePanel",
    "PanelResult",
    "ProviderError",
    "RubricScore",
    "RunConfig",
    "ScriptedModel",
    "TestModel",
    "Thresholds",
    "Transcript",
    "Usage",
    "Vote",
    "__version__",
    "default_judges",
    "judge_transcript",
    "judge_transcript_sync",
    "load_config",
    "load_transcript",
    "run_debate",
    "run_debate_sync",
    "write_result",
]
