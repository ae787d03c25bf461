"""The import contracts of ``pyproject.toml``, as Markdown for the architecture page.

The layering is stated once, in the import-linter contracts that ``lint-imports`` enforces;
the page shows them by reading that file at build time instead of keeping a copy that drifts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tomllib

MARKER = "<!-- import-contracts -->"


def contracts_markdown(pyproject: Path) -> str:
    """Each contract by name, with its layers (top to bottom) or its forbidden imports."""
    config = tomllib.loads(pyproject.read_text("utf-8"))["tool"]["importlinter"]
    blocks = [_contract(contract) for contract in config["contracts"]]
    return "\n\n".join(blocks)


def _contract(contract: dict[str, Any]) -> str:
    """One contract: its name, then what it holds."""
    kind = contract["type"]
    name = contract["name"].replace("_", r"\_")
    head = f"**{name}** (`{kind}`)"
    if kind == "layers":
        rows = [f"{n}. `{layer}`" for n, layer in enumerate(contract["layers"], start=1)]
        return head + ", top to bottom:\n\n" + "\n".join(rows)
    if kind == "forbidden":
        forbidden = ", ".join(f"`{name}`" for name in contract["forbidden_modules"])
        return f"{head}: none of {len(contract['source_modules'])} modules imports {forbidden}."
    packages = ", ".join(f"`{name}`" for name in contract.get("packages", []))
    return f"{head}: {packages}." if packages else head + "."
