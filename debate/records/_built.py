"""Records from values already of their fields' types: ``model_construct``, its cost cut.

``debate decide`` builds several records per item from numbers it has checked itself
(Python floats, None and bools from ``tolist``, names from the table). Validating them
again was a fifth of its time; pydantic's ``model_construct`` skips validation but still
walks every field's aliases and default machinery, which at 100,000 items was a further
tenth. :func:`built` makes the same record (the same ``__dict__`` in field order, the same
fields set, defaults copied as pydantic copies them) from a template made once per class.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

M = TypeVar("M", bound=BaseModel)

_IMMUTABLE = (type(None), bool, int, float, complex, str, bytes, type)
"""Defaults pydantic would hand out as they are (``smart_deepcopy`` copies nothing else)."""

Default = Callable[[], Any]


def _copied(value: Any) -> Default:
    return lambda: copy.deepcopy(value)


@dataclass(frozen=True)
class _Layout:
    """A record class's fields, worked out once: a template and what to make per record."""

    template: dict[str, Any]
    """Every field in order; a shared default where one can be shared, else a placeholder."""
    fresh: tuple[tuple[str, Default], ...]
    """Fields whose default is made anew for each record (factories, mutable defaults)."""
    required: frozenset[str]


@cache
def _layout(cls: type[BaseModel]) -> _Layout:
    if cls.__pydantic_root_model__ or cls.__pydantic_post_init__:
        raise TypeError(f"{cls.__name__}: built() makes plain records only")
    template: dict[str, Any] = {}
    fresh: list[tuple[str, Default]] = []
    required = set()
    for name, info in cls.__pydantic_fields__.items():
        template[name] = info.default
        if info.alias is not None or info.validation_alias is not None:
            raise TypeError(f"{cls.__name__}.{name}: built() makes records without aliases")
        if info.default_factory is not None:
            if info.default_factory_takes_validated_data:
                raise TypeError(f"{cls.__name__}.{name}: a default factory of the data")
            fresh.append((name, info.default_factory))  # type: ignore[arg-type]
        elif info.default is PydanticUndefined:
            required.add(name)
        elif not (isinstance(info.default, _IMMUTABLE) or info.default == ()):
            fresh.append((name, _copied(info.default)))
    return _Layout(template, tuple(fresh), frozenset(required))


_NEW = object.__new__
_SLOTS = BaseModel.__dict__
_SET_DICT = _SLOTS["__dict__"].__set__
_SET_FIELDS = _SLOTS["__pydantic_fields_set__"].__set__
_SET_EXTRA = _SLOTS["__pydantic_extra__"].__set__
_SET_PRIVATE = _SLOTS["__pydantic_private__"].__set__
"""BaseModel's own slot setters, called directly: ``object.__setattr__`` looks each one up
by name first, a third of this function's time at 300,000 records."""


def built(cls: type[M], **values: Any) -> M:
    """``cls.model_construct(**values)`` for a record without aliases or private attributes.

    No validation: give only values already of their fields' types, every required field
    among them.

    Raises:
        TypeError: a required field missing, or a name that is not a field.
    """
    layout = _layout(cls)
    fields = layout.template.copy()
    for name, make in layout.fresh:
        if name not in values:
            fields[name] = make()
    fields.update(values)
    if len(fields) != len(layout.template) or not values.keys() >= layout.required:
        raise TypeError(f"{cls.__name__}: give every required field and only fields")
    record: M = _NEW(cls)
    _SET_DICT(record, fields)
    _SET_FIELDS(record, set(values))
    _SET_EXTRA(record, None)
    _SET_PRIVATE(record, None)
    return record
