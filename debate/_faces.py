"""Faces whose names are imported on first use (PEP 562), written once for every package.

A stage package whose modules are costly to import (scipy, the server's packages, Ray) or
that its own modules import back (the batch's engines) still declares its whole face: its
``__init__`` maps each name to the private module that defines it, and the module-level
``__getattr__`` and ``__dir__`` made here import that module when the name is first asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any, cast


def lazy_names(
    namespace: dict[str, Any], modules: Mapping[str, tuple[str, ...]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a face (``namespace``: its ``globals()``).

    ``modules`` maps a module to the names it defines. A name is looked up in its module on
    every access, not copied into the face: the module is imported once (``sys.modules``), and a
    face never holds a value its module has since replaced (a test's ``monkeypatch`` of the
    module, undone after the test, would otherwise stay behind in the face).
    """
    where = {name: module for module, names in modules.items() for name in names}
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(where[name]), name)

    def __dir__() -> list[str]:
        return sorted({*namespace, *namespace.get("__all__", ())})

    return __getattr__, __dir__


def deferred(module: str, name: str) -> Callable[[Any], str]:
    """A renderer registered now and imported on its first call (``module``'s ``name``).

    Registering a result type's renderer with :func:`debate.report.render_html` must not
    import it: the renderers import the panel's decision and numpy, which a command that
    renders only after its model calls imports then, not before its first call.
    """

    def render(result: Any) -> str:
        return cast(Callable[[Any], str], getattr(importlib.import_module(module), name))(result)

    render.__name__ = render.__qualname__ = name
    render.__doc__ = f"``{module}.{name}``, imported on first use."
    return render
