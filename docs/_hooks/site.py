"""mkdocs hook: the pages generated at build time, and the checks that keep the docs honest.

- ``reference/cli.md``: the CLI reference, from the argparse parser (cli_reference.py).
- ``reference/result.schema.json`` and ``reference/council.schema.json``: the JSON Schemas
  shipped in the package (``debate schema result|council`` prints the same), so the
  reference page links the files a validator loads.
- ``architecture.md``: the import contracts, read from ``pyproject.toml`` (contracts.py), so
  the page states the layering that ``lint-imports`` enforces and no copy of it.
- ``llms.txt``: every Markdown link in it must name a page of this site, so the index for
  language models cannot point at a page that moved; a stale link fails the (strict) build.

Nothing here reaches the network: the build must work offline (``make test`` runs it).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
if str(ROOT) not in sys.path:  # the package of this checkout, not an installed one
    sys.path.insert(0, str(ROOT))
if str(DOCS / "_hooks") not in sys.path:
    sys.path.insert(0, str(DOCS / "_hooks"))

from cli_reference import cli_reference  # noqa: E402
from contracts import MARKER, contracts_markdown  # noqa: E402

SCHEMAS = ("result", "council")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def on_files(files: Files, config: Any) -> Files:
    """Add the generated pages and files; refuse an llms.txt link to no page."""
    files.append(File.generated(config, "reference/cli.md", content=cli_reference()))
    for kind in SCHEMAS:
        schema = ROOT / "debate" / "data" / f"{kind}.schema.json"
        files.append(
            File.generated(
                config, f"reference/{kind}.schema.json", content=schema.read_text("utf-8")
            )
        )
    llms = files.get_file_from_path("llms.txt")
    if llms is not None:
        for target in LINK.findall(Path(llms.abs_src_path or "").read_text("utf-8")):
            if files.get_file_from_path(target) is None:
                raise PluginError(f"llms.txt links to {target}, which is no page of the site")
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Put the import contracts where a page asks for them; refuse a page that lost its place."""
    if page.file.src_uri != "architecture.md":
        return markdown
    if MARKER not in markdown:
        raise PluginError(f"architecture.md must keep {MARKER}: the layering is shown there")
    return markdown.replace(MARKER, contracts_markdown(ROOT / "pyproject.toml"))
