"""The record of a deliberation: who moved, where, by how much, and toward whom.

Judges who see each other's reasoning and may revise (ChatEval, Chan et al., ICLR 2024;
D3) can correct a misreading, or merely conform. Conformity of LLM agents to the majority
is documented (Zhang et al., "Exploring Collaboration Mechanisms for LLM Agents", ACL
2024; Estornell and Liu, "Multi-LLM Debate", NeurIPS 2024), and in people social influence
raises agreement without raising accuracy (Lorenz et al., PNAS 2011). So a rise in alpha
after deliberation is not by itself evidence of a better verdict: the summary says how
much of the movement went toward the others' first-round scores (herding) and how much
of the rise in alpha those moves alone account for.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from debate.records._transcript import Frozen, Standing

Direction = Literal["toward", "away", "across"]
"""Of a move, relative to the other judges' first-round mean: its distance shrank, grew, or
stayed the same (a jump to the mirror point on the other side)."""

HERDING_METHOD = (
    "a move is a revision that changes the judge's weighted rubric total of an argument; "
    "it is toward the others when its distance to the leave-one-out mean (the other scored "
    "judges' first-round rubric scores, averaged and weighted by this judge's weights) "
    "shrank, away when it grew; herding share = moves toward / moves; alpha from herding = "
    "alpha with only the moves toward applied (the rest reverted) minus alpha before"
)
"""The definition echoed in every summary, so a reader need not look it up."""


class Move(Frozen):
    """One judge's revision of one argument's score."""

    judge: str
    argument: str
    first: float
    """The judge's weighted rubric total before deliberation (1-10 scale)."""
    final: float
    """The same after."""
    others_mean: float | None
    """The other scored judges' first-round rubric scores, averaged per dimension and
    weighted by this judge's weights: where this judge would land by adopting their mean.
    None without another scored judge."""
    direction: Direction | None
    """Relative to ``others_mean`` (None when it is None)."""
    standing_first: Standing
    standing_final: Standing


class JudgeMoves(Frozen):
    """One judge's deliberation in numbers."""

    judge: str
    status: Literal["deliberated", "failed"]
    """``failed``: the call failed, the first scores stand (see the evaluation's record)."""
    revised: list[str] = Field(default_factory=list)
    """Arguments the judge revised (scores or standing)."""
    moves: int = 0
    """Revisions that changed the weighted rubric total."""
    toward: int = 0
    away: int = 0
    toward_share: float | None = None
    """``toward / moves``; None without a move."""
    mean_abs_change: float | None = None
    """Mean absolute change of the weighted rubric total over its moves; None without one."""


class DeliberationSummary(Frozen):
    """What deliberation did to the panel.

    The result's ``decision`` is on the final scores; the first round's is
    ``first_decision``.
    """

    rounds: int = Field(ge=1)
    split_arguments: list[str]
    """The arguments the judges were asked to reconsider, in transcript order."""
    split_why: dict[str, list[Literal["standings", "variance"]]] = Field(default_factory=dict)
    """Per split argument: the scored judges' standings differ, and/or its variance across
    judges reached ``thresholds.variance`` (the rule that names high-variance arguments)."""
    judges: list[JudgeMoves] = Field(default_factory=list)
    """Each scored judge asked to deliberate."""
    moves: list[Move] = Field(default_factory=list)
    mean_abs_change: float | None = None
    """Mean absolute change of the weighted rubric total over every move (None: no move)."""
    toward: int = 0
    """Moves toward the other judges' first-round mean."""
    away: int = 0
    herding_share: float | None = None
    """``toward / moves`` over the panel; None without a move."""
    alpha_before: float | None = None
    """Krippendorff's alpha (calibrated scores) of the first round."""
    alpha_after: float | None = None
    """The same on the final scores."""
    alpha_herding_only: float | None = None
    """Alpha with only the moves toward the others applied."""
    alpha_from_herding: float | None = None
    """``alpha_herding_only - alpha_before``: the rise the moves toward the others alone
    account for."""
    outcome_changed: bool = False
    """The final decision's outcome or winner differs from the first round's."""
    method: str = HERDING_METHOD

    def text(self) -> str:
        """One plain sentence: ``agreement rose from 0.31 to 0.62; 7 of 8 moves ...``."""
        if not self.split_arguments:
            return "deliberation: the judges split on no argument, so nobody was asked"
        before, after = _fmt(self.alpha_before), _fmt(self.alpha_after)
        if self.alpha_before is None or self.alpha_after is None:
            verb = "went"
        else:
            verb = "rose" if self.alpha_after > self.alpha_before else "fell"
            verb = "stayed" if self.alpha_after == self.alpha_before else verb
        head = f"agreement {verb} from {before} to {after}"
        if verb == "stayed":
            head = f"agreement stayed at {before}"
        moves = len(self.moves)
        if not moves:
            tail = "no judge moved"
        else:
            tail = (
                f"{self.toward} of {moves} move{'s' if moves != 1 else ''} "
                f"{'was' if self.toward == 1 else 'were'} toward the other judges' mean "
                f"(herding), {self.away} away"
            )
            if self.alpha_from_herding is not None:
                tail += f"; the moves toward alone change alpha by {self.alpha_from_herding:+.2f}"
        failed = [j.judge for j in self.judges if j.status == "failed"]
        if failed:
            tail += f"; deliberation failed for {', '.join(failed)} (first scores kept)"
        return f"{head}; {tail}"


def _fmt(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.2f}"
