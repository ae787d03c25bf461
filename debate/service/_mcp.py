"""``debate mcp``: the package's four entry points as MCP tools, on the official SDK.

An assistant (Claude Desktop, an IDE, an agent framework) calls ``run_debate``,
``judge_transcript``, ``rank_candidates`` or ``decide`` and gets two things back: the verdict
(:mod:`debate.service._verdict`) as a few lines of text to read, and, as structured content,
the verdict and the whole result record (``result.json``'s shape) for a program. While a tool
runs, every package event becomes an MCP progress notification: the plan gives the total, and
each finished model call advances it by one.

The server's models come from its own config, exactly as for the other commands; a client may
change only what :class:`~debate.service._models.PanelOverrides` allows (roles, arguments,
rounds, seed, thresholds), never an endpoint, a key or a file. Keys are read from the
environment by the model backends and appear in no reply and no log line.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent
from pydantic import Field, StrictInt, ValidationError

from debate._version import __version__
from debate.api import judge_transcript, run_debate
from debate.council import run_council
from debate.exceptions import (
    ConfigurationError,
    DebateError,
)
from debate.judgments import decide_judgments, read_judgment_rows
from debate.models import Model
from debate.records import Candidate, Frozen, RunConfig, Transcript
from debate.runtime import Event, ModelPool, Planned, Run, StepFinished, planned_calls
from debate.service._models import (
    CouncilCandidate,
    CouncilRequest,
    DebateRequest,
    DecisionRequest,
    JobKind,
    JudgementRequest,
    PanelOverrides,
)
from debate.service._requests import (
    checked,
    one_line,
    panel_overrides,
    with_overrides,
)
from debate.service._runner import job_error
from debate.service._verdict import (
    Verdict,
    council_verdict,
    debate_verdict,
    decision_verdict,
    summary,
)

logger = logging.getLogger(__name__)

Transport = Literal["stdio", "http"]
MCP_PATH = "/mcp"
"""Where the streamable HTTP transport listens."""
LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class Models:
    """Models a tool uses instead of the ones the config names (None: the config's).

    Tests hand the package's doubles (``FunctionModel``, ``TestModel``) through this seam;
    the command leaves it empty, so every model is the config's, at its endpoint, with its key.
    """

    model: Model | None = None
    """One model for debaters and judges (and council reviewers)."""
    judges: Mapping[str, Model] | None = None
    """Model per judge name (council: per reviewer)."""


ModelFactory = Callable[[RunConfig], Models]
"""Given one call's config (the server's, with the client's overrides), its models."""


class VerdictReply(Frozen):
    """A tool's structured content: the verdict, and the whole result record."""

    verdict: Verdict
    result: dict[str, Any]
    """``DebateResult`` (debate, judgement) or ``CouncilResult`` (council) as JSON."""


class DecisionsReply(Frozen):
    """``decide``'s structured content: one verdict per decision, and the whole record."""

    verdicts: list[Verdict]
    result: dict[str, Any]
    """``Decided`` as JSON: the summary and every item's decision."""


VerdictResult = Annotated[CallToolResult, VerdictReply]
DecisionsResult = Annotated[CallToolResult, DecisionsReply]


class Progress:
    """Package events as MCP progress notifications, sent in order from one task.

    The package calls ``on_event`` synchronously from inside the run; a notification is a
    message to send, so each is queued and one task sends them in turn: the client sees the
    plan first (progress 0 of the total), then one step per finished model call.
    """

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._queue: asyncio.Queue[tuple[float, float | None, str] | None] = asyncio.Queue()
        self.total: int | None = None
        self.done = 0

    def __call__(self, event: Event) -> None:
        """Queue the notification an event makes (plans and finished steps make one)."""
        if isinstance(event, Planned):
            self.total = event.total
            self._queue.put_nowait((0, event.total, f"{event.command}: {event.total} model calls"))
        elif isinstance(event, StepFinished):
            self.done += 1
            step = event.phase.replace("_", " ")
            status = "ok" if event.ok else f"failed ({event.detail})"
            self._queue.put_nowait((self.done, self.total, f"{step} {event.actor} {status}"))

    async def _send(self) -> None:
        while (item := await self._queue.get()) is not None:
            await self._ctx.report_progress(*item)

    @asynccontextmanager
    async def sending(self) -> AsyncIterator[Progress]:
        """Send notifications while the block runs, and every queued one before it ends."""
        task = asyncio.create_task(self._send())
        try:
            yield self
        finally:
            self._queue.put_nowait(None)
            await task


@dataclass
class DebateTools:
    """The tools, over one server config, one model pool and the model seam."""

    config: RunConfig
    pool: ModelPool
    models: ModelFactory = field(default=lambda _: Models())

    async def _run(
        self, ctx: Context, command: str, total: int, work: Callable[[Progress], Awaitable[Any]]
    ) -> Any:
        async with Progress(ctx).sending() as progress:
            progress(Planned(command=command, total=total))
            return await work(progress)

    async def run_debate(
        self,
        topic: Annotated[str, Field(description="The proposition, e.g. 'Should we adopt X?'")],
        ctx: Context,
        judges: Annotated[
            list[str] | None, Field(description="Judge roles, e.g. ['technical', 'risk']")
        ] = None,
        arguments: Annotated[
            StrictInt | None, Field(description="Arguments per side, 1-10")
        ] = None,
        rounds: Annotated[
            StrictInt | None, Field(description="Cross-examination rounds, 0-5")
        ] = None,
        seed: Annotated[StrictInt | None, Field(description="Sampling seed, 0 to 2**32-1")] = None,
    ) -> VerdictResult:
        """Debate a proposition (PRO against CON) and judge it with the calibrated panel.

        Returns the verdict: a winner only when the judges agree, otherwise an honest
        too_close, irreconcilable or insufficient, with the reasons.
        """
        changes = panel_overrides(judges=judges, arguments=arguments, rounds=rounds, seed=seed)
        return await self._panel_verdict(ctx, checked(DebateRequest, topic=topic, config=changes))

    async def judge_transcript(
        self,
        transcript: Annotated[
            Transcript, Field(description="The debate to judge: topic, arguments, closings")
        ],
        ctx: Context,
        judges: Annotated[list[str] | None, Field(description="Judge roles")] = None,
        seed: Annotated[StrictInt | None, Field(description="Sampling seed")] = None,
    ) -> VerdictResult:
        """Judge a transcript written anywhere (our debaters, a meeting, another tool)."""
        changes = panel_overrides(judges=judges, seed=seed)
        return await self._panel_verdict(
            ctx, checked(JudgementRequest, transcript=transcript, config=changes)
        )

    async def _panel_verdict(
        self, ctx: Context, request: DebateRequest | JudgementRequest
    ) -> VerdictResult:
        """Debate a topic or judge a transcript with the panel; its verdict and full result."""
        config = with_overrides(self.config, request.config)
        models = self.models(config)
        debating = isinstance(request, DebateRequest)
        begin = (
            functools.partial(run_debate, request.topic)
            if isinstance(request, DebateRequest)
            else functools.partial(judge_transcript, request.transcript)
        )
        result = await self._run(
            ctx,
            "run" if debating else "judge",
            planned_calls(config, debate=debating),
            lambda progress: begin(
                config=config,
                model=models.model,
                judges=models.judges,
                seed=request.config.seed,
                run=Run(pool=self.pool, on_event=progress),
            ),
        )
        kind: JobKind = "debate" if debating else "judgement"
        return _verdict_result(debate_verdict(result, kind), result.model_dump(mode="json"))

    async def rank_candidates(
        self,
        question: Annotated[str, Field(description="The question the candidates answer")],
        candidates: Annotated[
            list[CouncilCandidate], Field(description="Two or more answers, each {id, text}")
        ],
        ctx: Context,
        judges: Annotated[list[str] | None, Field(description="Reviewer roles")] = None,
        seed: Annotated[StrictInt | None, Field(description="Sampling seed")] = None,
    ) -> VerdictResult:
        """Rank candidate answers with a council of reviewers; ties are reported as ties."""
        changes = panel_overrides(judges=judges, seed=seed)
        request = checked(CouncilRequest, question=question, candidates=candidates, config=changes)
        config = with_overrides(self.config, request.config)
        models = self.models(config)
        given = [Candidate(id=c.id, text=c.text, author_model=c.model) for c in request.candidates]
        result = await self._run(
            ctx,
            "council",
            len(config.judges),
            lambda progress: run_council(
                request.question,
                given,
                reviewers=models.judges,
                model=models.model,
                config=config,
                seed=request.config.seed,
                run=Run(pool=self.pool, on_event=progress),
            ),
        )
        return _verdict_result(council_verdict(result), result.model_dump(mode="json"))

    async def decide(
        self,
        rows: Annotated[
            list[dict[str, Any]],
            Field(
                description="Judgments as rows (docs/judgments.md): score rows {item, option, "
                "judge, dimension, score} or verdict rows {item, judge, verdict}"
            ),
        ],
        scale: Annotated[str | None, Field(description="Score scale, e.g. '1-5'")] = None,
        weights: Annotated[
            Literal["equal", "latent"] | dict[str, float],
            Field(description="equal, latent, or judge -> weight"),
        ] = "equal",
        dimension: Annotated[str | None, Field(description="Decide on this dimension")] = None,
        seed: Annotated[StrictInt, Field(description="Seed of the bootstrap intervals")] = 0,
    ) -> DecisionsResult:
        """Decide from judgments made elsewhere with the panel's rules (no model is called).

        One decision per item (per pair of options when an item has more than two).
        """
        request = checked(
            DecisionRequest,
            rows=rows,
            scale=scale,
            weights=weights,
            dimension=dimension,
            seed=seed,
        )
        thresholds = self.config.thresholds
        decided = await asyncio.to_thread(
            decide_judgments,
            read_judgment_rows(request.rows, scale=request.scale),
            weights=request.weights,
            thresholds=thresholds,
            dimension=request.dimension,
            seed=request.seed,
        )
        verdicts = [
            decision_verdict(d, thresholds.confidence, thresholds.variance)
            for d in decided.decisions
        ]
        text = "\n".join(summary(v) for v in verdicts) or "no decisions"
        reply = DecisionsReply(verdicts=verdicts, result=decided.model_dump(mode="json"))
        return CallToolResult(
            content=[TextContent(type="text", text=text)],
            structured_content=reply.model_dump(mode="json"),
        )


def tool_error(exc: BaseException) -> CallToolResult:
    """A tool error: the CLI's one-line message, and the error object as structured content."""
    error = job_error(exc, any_field=True)
    return CallToolResult(
        content=[TextContent(type="text", text=error.message)],
        structured_content={"error": error.model_dump()},
        is_error=True,
    )


def _verdict_result(verdict: Verdict, result: dict[str, Any]) -> CallToolResult:
    reply = VerdictReply(verdict=verdict, result=result)
    return CallToolResult(
        content=[
            TextContent(type="text", text=summary(verdict)),
            TextContent(type="text", text=verdict.model_dump_json()),
        ],
        structured_content=reply.model_dump(mode="json"),
    )


class DebateServer(MCPServer[Any]):
    """MCPServer whose tool errors are the package's one-line messages.

    The SDK checks a call's arguments against the tool's signature before the tool runs and
    reports pydantic's multi-line text; here that becomes one line naming the argument, and
    every package error a tool raises becomes a tool error with its kind and field. An
    argument the tool does not take is refused too: the SDK would drop it silently, so a
    client sending ``base_url`` (which only the server sets) would believe it was used.
    A count or a seed is taken as a number only (``"arguments": "3"`` is refused, not read
    as 3): those arguments are strict.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.parameters: dict[str, tuple[str, ...]] = {}
        """Each tool's argument names, for refusing the ones it does not take."""

    def add_debate_tool(self, tool: Callable[..., Any]) -> None:
        """Add a tool and note the arguments it takes (all but its MCP context)."""
        self.add_tool(tool)
        names = inspect.signature(tool).parameters
        self.parameters[tool.__name__] = tuple(n for n in names if n != "ctx")

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        """Call the tool; a bad argument or a package error is a tool error (``is_error``)."""
        known = self.parameters.get(name)
        unknown = sorted(set(arguments) - set(known)) if known is not None else []
        if known is not None and unknown:
            return tool_error(
                ConfigurationError(
                    f"{unknown[0]}: not an argument of {name}; it takes {', '.join(known)} "
                    "(models, endpoints and keys are the server's)",
                    field=unknown[0],
                )
            )
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                return tool_error(ConfigurationError(one_line(cause, PanelOverrides)))
            if isinstance(cause, DebateError):
                if not isinstance(cause, ConfigurationError):
                    logger.warning("tool %s failed: %s", name, " ".join(str(cause).split()))
                return tool_error(cause)
            raise


def build_server(
    config: RunConfig,
    *,
    model_path: str | None = None,
    models: ModelFactory | None = None,
) -> DebateServer:
    """The MCP server with the four tools over ``config``'s models (or the factory's)."""
    pool = ModelPool(config, model_path=model_path)
    if models is None:
        pool.prepare(config)  # a missing key is bad input now, not at the first call
    tools = DebateTools(config, pool, models or (lambda _: Models()))

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        try:
            yield None
        finally:
            await pool.aclose()

    server = DebateServer(
        "debate",
        version=__version__,
        instructions="Structured LLM debates judged by a calibrated panel: a verdict only "
        "when the judges agree, otherwise an honest split.",
        log_level="WARNING",
        lifespan=lifespan,
    )
    for tool in (tools.run_debate, tools.judge_transcript, tools.rank_candidates, tools.decide):
        server.add_debate_tool(tool)
    return server


def serve(server: DebateServer, transport: Transport, host: str, port: int) -> None:
    """Run ``server`` over stdio, or over streamable HTTP at ``http://HOST:PORT/mcp``.

    Over HTTP the SDK's DNS-rebinding check accepts only this address as the ``Host`` (and
    ``localhost`` for a loopback address): a web page cannot reach the server through a name
    it controls. The endpoint has no authentication of its own, so on another address than
    loopback it must sit behind a proxy that authenticates (``debate serve`` has tokens).
    """
    if transport == "stdio":
        server.run("stdio")
        return
    names = [host, "localhost"] if host in LOOPBACK else [host]
    security = TransportSecuritySettings(
        allowed_hosts=[f"{n}:{port}" for n in names],
        allowed_origins=[f"http://{n}:{port}" for n in names],
    )
    if host not in LOOPBACK:
        logger.warning(
            "MCP over HTTP on %s has no authentication; serve it behind an authenticating proxy",
            host,
        )
    server.run(
        "streamable-http",
        host=host,
        port=port,
        streamable_http_path=MCP_PATH,
        transport_security=security,
    )


__all__ = ["DebateServer", "Models", "build_server", "serve"]
