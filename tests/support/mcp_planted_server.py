"""``debate mcp``'s server over planted models, for tests/service/test_service_mcp.py.

Built through the server's model seam (``build_server(models=...)``): the debaters are the
package's ``TestModel``; every judge scores PRO's arguments 8 and CON's 3, so the panel
agrees that PRO wins; every council reviewer gives 9 to an answer containing "good" and 3 to
the others. Run as ``python -m tests.support.mcp_planted_server`` from the repository root; it
speaks MCP over stdio.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from debate.models import Message
from debate.models.test import FunctionModel, TestModel
from debate.records import RunConfig
from debate.service._mcp import Models, build_server, serve
from tests.support.helpers import planted_judges, review_reply, shown_candidates

PRO_SCORE, CON_SCORE = 8, 3

_judge = planted_judges(lambda role, arg_id: PRO_SCORE if arg_id.startswith("PRO") else CON_SCORE)


def reply(messages: list[Message], schema: type[BaseModel]) -> Any:
    """A judge's planted scores, or a reviewer's: "good" answers 9, the others 3."""
    if "evaluations" in schema.model_fields:
        shown = shown_candidates(messages)
        return review_reply({label: 9 if "good" in text else 3 for label, text in shown})
    return _judge(messages, schema)


def models(config: RunConfig) -> Models:
    """TestModel debaters; one planted FunctionModel per judge of the call's config."""
    judges = {j.name: FunctionModel(reply, name=f"planted-{j.name}") for j in config.judges}
    return Models(model=TestModel(seed=1), judges=judges)


if __name__ == "__main__":
    serve(build_server(RunConfig(), models=models), "stdio", "127.0.0.1", 0)
