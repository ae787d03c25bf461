"""Each stage package's face: its names resolve, and reaching past it breaks a contract."""

from __future__ import annotations

import ast
import importlib

import pytest
from grimp import ImportGraph

from tests.support import ROOT
from tests.support.faces_contract import breaches, private_owner
from tests.support.imports import loaded

PACKAGES = [
    "debate.records",
    "debate.stats",
    "debate.models",
    "debate.storage",
    "debate.runtime",
    "debate.protocol",
    "debate.panel",
    "debate.council",
    "debate.report",
    "debate.judgments",
    "debate.quality",
    "debate.batch",
    "debate.service",
]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_name_a_face_declares_resolves(package: str) -> None:
    face = importlib.import_module(package)
    missing = [name for name in face.__all__ if not hasattr(face, name)]
    assert missing == []
    assert face.__all__, f"{package} declares no face"


def lazy_declarations(package: str) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """A lazy face's (module, name) pairs: in its ``_MODULES``, and in its TYPE_CHECKING imports."""
    tree = ast.parse((ROOT / package.replace(".", "/") / "__init__.py").read_text("utf-8"))
    typed: set[tuple[str, str]] = set()
    mapped: set[tuple[str, str]] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imported in node.body:
                assert isinstance(imported, ast.ImportFrom)
                typed |= {(str(imported.module), alias.name) for alias in imported.names}
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "_MODULES":
            modules = ast.literal_eval(node.value)  # type: ignore[arg-type]
            mapped |= {(module, name) for module, names in modules.items() for name in names}
    return mapped, typed


@pytest.mark.parametrize("package", [p for p in PACKAGES if lazy_declarations(p)[0]])
def test_a_lazy_face_tells_mypy_and_the_docs_what_it_imports(package: str) -> None:
    # mypy and mkdocstrings read the TYPE_CHECKING imports, the face imports from _MODULES:
    # a name in one only was a broken API reference page (debate.write_judgments)
    mapped, typed = lazy_declarations(package)
    assert mapped == typed


def graph_of(*imports: tuple[str, str]) -> ImportGraph:
    graph = ImportGraph()
    for importer, imported in imports:
        graph.add_import(importer=importer, imported=imported, line_number=1, line_contents="")
    return graph


def test_a_private_module_is_its_package_s_alone() -> None:
    packages = ["p.a", "p.b"]
    assert private_owner("p.b._x", packages) == "p.b"
    assert private_owner("p.b._x.deep", packages) == "p.b"
    assert private_owner("p.b", packages) is None
    assert private_owner("p.b.public", packages) is None
    assert private_owner("p.b.__init__", packages) is None
    assert private_owner("p.c._x", packages) is None


def test_only_imports_past_another_package_s_face_are_breaches() -> None:
    graph = graph_of(
        ("p.a._one", "p.b._x"),  # reaches into b: a breach
        ("p.a._one", "p.b"),  # b's face: fine
        ("p.a._one", "p.b.public"),  # a public submodule: fine
        ("p.b._y", "p.b._x"),  # inside b: fine
        ("p.b", "p.b._x"),  # the face itself: fine
        ("p.top", "p.a._one._deep"),  # below a private module: a breach
    )
    found = breaches(graph, ["p.a", "p.b"])
    assert [(importer, imported) for importer, imported, _ in found] == [
        ("p.top", "p.a._one._deep"),
        ("p.a._one", "p.b._x"),
    ]


def test_the_records_and_a_config_s_statistics_names_import_no_numpy() -> None:
    # a config, a policy and a validity report name an aggregate, Platt and Bin: the lazy
    # stats face serves them from stats/_plain.py, so reading a config does not load numpy
    probe = (
        "from debate.records import Policy, RunConfig, ValidityReport\n"
        "from debate.stats import LEVELS, RUBRIC_WEIGHTS, Bin, Platt, check_weights\n"
        "RunConfig()\nassert Platt(slope=1.0, intercept=0.0, n=3).slope == 1.0"
    )
    assert loaded(probe, "numpy") == []
