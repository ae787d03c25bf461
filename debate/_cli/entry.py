"""The ``debate`` command's process entry: the CLI's imports with the collector held, then frozen.

Importing the CLI creates some hundred thousand objects (the pydantic models' validators,
numpy, jinja, aiohttp's parsers later): with the cyclic collector running, each 700 of them
trigger a young collection that walks what the last ones left, and the older generations
are walked again and again as they grow, about 140 collections before the first model call.
None of those objects is garbage: they are the modules, alive until the process exits. So
the process's own command imports the CLI with the collector held and then moves everything
alive to the permanent generation (:func:`debate._gc.freeze_survivors`); later collections
(a batch keeps its collector) walk only what the command itself made since. A program that
imports :mod:`debate._cli.main` itself keeps its collector as it was.
"""

from __future__ import annotations

import os
import sys

from debate._gc import collector_held, freeze_survivors


def main() -> int:
    """Run the ``debate`` command in this process (``sys.argv``); its exit code.

    The command's own module (every command's, for ``debate --help``) is imported here too,
    as :func:`debate._cli.main.build_parser` will ask for it. ``debate --version`` alone is
    answered first, as argparse answers it: a script that checks the installed version
    waited 0.7 s for every command's parser (pydantic's models, jinja, the tables) to
    print one line. With ``DEBATE_WARM=1`` a warm command runs in a fork of a warm process
    (:mod:`debate._cli.warm_client`), which has imported all of this already.
    """
    if os.environ.get("DEBATE_WARM"):
        from debate._cli import warm_client

        if warm_client.wanted(sys.argv[1:]):
            code = warm_client.run(sys.argv[1:])
            if code is not None:
                return code
    if sys.argv[1:] == ["--version"]:
        from debate._version import VERSION_LINE

        sys.stdout.write(VERSION_LINE + "\n")
        return 0
    with collector_held():
        from debate._cli.main import commands
        from debate._cli.main import main as command

        commands(sys.argv[1] if len(sys.argv) > 1 else None)
        freeze_survivors()
    return command()
