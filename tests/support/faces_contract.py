"""An import-linter contract: packages import each other's faces, never a private module.

import-linter has no built-in "private module" contract, and a ``forbidden`` contract per
package would list every private module by hand (and go stale the day one is added). This
one derives them: inside each listed package, a module whose name starts with ``_`` (and
anything below it) is private to that package; an import of it from outside the package
breaks the contract. ``__init__`` is the face, and public submodules (no ``_``) stay open.
"""

from __future__ import annotations

from grimp import ImportGraph
from importlinter import Contract, ContractCheck, fields, output


def private_owner(module: str, packages: list[str]) -> str | None:
    """The listed package ``module`` is private to, or None where it is public."""
    for package in packages:
        if not module.startswith(package + "."):
            continue
        first = module[len(package) + 1 :].split(".", 1)[0]
        if first.startswith("_") and not first.startswith("__"):
            return package
    return None


def breaches(graph: ImportGraph, packages: list[str]) -> list[tuple[str, str, int | None]]:
    """Every (importer, imported, line) where a module reaches into another package's privates."""
    found = []
    for imported in sorted(graph.modules):
        owner = private_owner(imported, packages)
        if owner is None:
            continue
        for importer in sorted(graph.find_modules_that_directly_import(imported)):
            if importer == owner or importer.startswith(owner + "."):
                continue
            details = graph.get_import_details(importer=importer, imported=imported)
            lines = [d["line_number"] for d in details] or [None]
            found.extend((importer, imported, line) for line in lines)
    return found


class FacesContract(Contract):
    """Other packages import a package's face (``__init__``), not its ``_private`` modules.

    Configuration: ``packages``, the packages whose private modules are theirs alone.
    """

    type_name = "faces"

    packages = fields.ListField(subfield=fields.StringField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        """Kept when no module outside a package imports one of its private modules."""
        found = breaches(graph, [str(p) for p in self.packages])  # type: ignore[attr-defined]
        return ContractCheck(kept=not found, metadata={"breaches": found})

    def render_broken_contract(self, check: ContractCheck) -> None:
        """One line per import that reaches past a face, with the line it is on."""
        for importer, imported, line in check.metadata["breaches"]:
            output.print_error(f"{importer} imports {imported} (l.{line}): import the face")
            output.new_line()
