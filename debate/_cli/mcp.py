"""``debate mcp``: serve the debate, judge, council and decide tools to an MCP client.

The server's models are chosen like every other command's (``--config``, ``--model``,
``--base-url``, ``--api-key-env``, ``--model-path``), checked before the server starts, so a
bad flag is one line and exit code 2 instead of a server that fails on its first call.
The ``mcp`` SDK is the optional extra ``server``; it is imported only when this command runs.
"""

from __future__ import annotations

import argparse
from typing import Any

from debate._cli.config import (
    MODEL_FLAGS,
    check_config_files,
    check_model_flags,
    config_flags,
    model_choice_flags,
    panel_config,
)
from debate._cli.exits import EXIT_OK
from debate._cli.parsing import Commands, count_flag, subcommand
from debate.exceptions import ConfigurationError

HELP = "serve the tools to an MCP client (stdio or streamable HTTP)"
DESCRIPTION = (
    "An MCP server with the tools run_debate, judge_transcript, "
    "rank_candidates and decide, each returning the verdict and the whole result, and "
    "reporting progress as MCP progress notifications."
)


def add_parser(commands: Commands) -> None:
    """Register ``debate mcp``."""
    parser = subcommand(commands, "mcp", mcp_command, HELP, DESCRIPTION)
    parser.add_argument(
        "--transport",
        choices=["stdio", "http"],
        default="stdio",
        help="stdio (default: the client starts this command) or streamable HTTP at /mcp",
    )
    parser.add_argument("--host", default="127.0.0.1", help="HTTP address (default 127.0.0.1)")
    count_flag(
        parser, "--port", 1, 65535, metavar=None, default=8766, help="HTTP port (default 8766)"
    )
    group = parser.add_argument_group("model")
    config_flags(group)
    model_choice_flags(
        group,
        base_url="OpenAI-compatible endpoint of --model",
        api_key_env="environment variable holding the key of --base-url's server ('' for "
        "none); default OPENAI_API_KEY, for OpenAI's API only",
    )


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    check_model_flags(args)
    return {field: getattr(args, field) for field in MODEL_FLAGS}


def mcp_command(args: argparse.Namespace) -> int:
    """Check the flags and the config, then serve until the client (or Ctrl-C) stops it."""
    config = panel_config(args, _overrides(args), MODEL_FLAGS)
    check_config_files(config)  # a broken template or topic table is bad input now
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
