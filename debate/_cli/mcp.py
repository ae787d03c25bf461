"""``debate mcp``: serve the debate, judge, council and decide tools to an MCP client.

The server's models are chosen like every other command's (``--config``, ``--model``,
``--base-url``, ``--api-key-env``, ``--model-path``), checked before the server starts, so a
bad flag is one line and exit code 2 instead of a server that fails on its first call.
The ``mcp`` SDK is the optional extra ``server``; it is imported only when this command runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from debate._cli.config import config_flags, panel_config
from debate._cli.exits import EXIT_OK
from debate._cli.parsing import Commands
from debate._cli.values import at_least
from debate.exceptions import ConfigurationError
from debate.panel import TopicProfiles
from debate.runtime import PromptRenderer

FLAGS = {"model": "--model", "base_url": "--base-url", "api_key_env": "--api-key-env"}
"""The config fields this command's flags set, and the flag a bad value is reported under."""


def add_parser(commands: Commands) -> None:
    """Register ``debate mcp``."""
    parser = commands.add_parser(
        "mcp",
        help="serve the tools to an MCP client (stdio or streamable HTTP)",
        description="An MCP server with the tools run_debate, judge_transcript, "
        "rank_candidates and decide, each returning the verdict and the whole result, and "
        "reporting progress as MCP progress notifications.",
    )
    parser.add_argument(
        "--transport",
        choices=["stdio", "http"],
        default="stdio",
        help="stdio (default: the client starts this command) or streamable HTTP at /mcp",
    )
    parser.add_argument("--host", default="127.0.0.1", help="HTTP address (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=at_least(1, 65535), default=8766, help="HTTP port (default 8766)"
    )
    group = parser.add_argument_group("model")
    config_flags(group)
    group.add_argument(
        "--model",
        help="model for debaters and judges: 'local' (embedded, default), 'scripted' "
        "(offline placeholder) or a model name served at --base-url / by OpenAI",
    )
    group.add_argument("--base-url", help="OpenAI-compatible endpoint of --model")
    group.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="environment variable holding the key of --base-url's server ('' for none); "
        "default OPENAI_API_KEY, for OpenAI's API only",
    )
    group.add_argument("--model-path", metavar="FILE.gguf", help="run this GGUF file in-process")
    parser.set_defaults(func=mcp_command)


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    if args.model is None and args.base_url is not None:
        raise ConfigurationError("--model: name the model served at --base-url")
    if args.model_path is not None and args.base_url is not None:
        raise ConfigurationError(
            "--model-path: runs a GGUF file in-process, so --base-url would ignore it; "
            "give one of the two"
        )
    if args.model_path is not None and not Path(args.model_path).is_file():
        raise ConfigurationError(
            f"--model-path: {args.model_path} is not a file; give the path of a .gguf model"
        )
    return {field: getattr(args, field) for field in FLAGS}


def mcp_command(args: argparse.Namespace) -> int:
    """Check the flags and the config, then serve until the client (or Ctrl-C) stops it."""
    config = panel_config(args, _overrides(args), FLAGS)
    PromptRenderer(config.templates)  # a broken template or topic table is bad input now
    if config.topics is not None:
        TopicProfiles.load(config.topics)
    try:
        from debate.service import build_server, serve
    except ImportError as exc:
        raise ConfigurationError(
            f"debate mcp needs the 'server' extra with the mcp SDK 2 or later ({exc.name} "
            'cannot be imported); install it with pip install -e ".[server]"'
        ) from exc
    server = build_server(config, model_path=args.model_path)
    serve(server, args.transport, args.host, args.port)
    return EXIT_OK
