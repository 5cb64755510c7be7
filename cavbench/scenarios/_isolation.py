"""Per-episode copies of the scenario parts an adapter can reach, and their digest.

An adapter runs in the harness's process, so the read-only containers of the view only stop
honest mistakes: `dict.clear(step.changes)` or `object.__setattr__(step, ...)` bypass them.
Each episode therefore gets its own deep copy of the view, the initial state and the fault
injections; whatever an adapter does to them reaches no other episode and not the cached
pack. After the episode the copies are compared with the originals, and the digest of what
actually ran is recorded (`docs/design/adapter-isolation.md`). Walking frames or the garbage
collector, or patching classes, is beyond any in-process design: untrusted agents belong
out of process (the gateway).
"""

from __future__ import annotations

import hashlib
import json
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from typing import Any

from pydantic import BaseModel

from cavbench.scenarios._frozen import FrozenDict, FrozenList

_new = object.__new__
_set = object.__setattr__


def _same(value: Any) -> Any:
    return value


def _copy_dict(value: dict[str, Any]) -> dict[str, Any]:
    out = dict(value)
    for key, item in out.items():
        if type(item) not in _SHARED:
            out[key] = deep_copy(item)
    return out


def _immutable(annotation: Any) -> bool:
    """Whether every value a field so annotated can hold is immutable (str, numbers, enum
    members, None, tuples of those): such fields are shared, not copied."""
    if annotation in (str, int, float, bool, type(None)):
        return True
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return True
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _immutable(args[0])
    if origin is typing.Literal:
        return True
    if origin in (typing.Union, types.UnionType, tuple):
        return all(a is Ellipsis or _immutable(a) for a in args)
    return False


_MUTABLE_FIELDS: dict[type, tuple[str, ...]] = {}


def _mutable_fields(kind: type[BaseModel]) -> tuple[str, ...]:
    fields = _MUTABLE_FIELDS.get(kind)
    if fields is None:
        fields = tuple(
            name for name, info in kind.model_fields.items() if not _immutable(info.annotation)
        )
        _MUTABLE_FIELDS[kind] = fields
    return fields


def _copy_model(value: BaseModel) -> BaseModel:
    # What `model_copy(deep=True)` does, without `copy.deepcopy`'s memo, and visiting only
    # the fields whose type can hold something mutable (5-10x faster).
    kind = type(value)
    data = value.__dict__.copy()
    data.pop("_compiled", None)  # derived from the original: the copy compiles its own
    for name in _mutable_fields(kind):
        item = data.get(name)
        if item is not None and type(item) not in _SHARED:
            data[name] = deep_copy(item)
    copy = _new(kind)
    _set(copy, "__dict__", data)
    _set(copy, "__pydantic_fields_set__", set(value.__pydantic_fields_set__))
    _set(copy, "__pydantic_extra__", None)
    _set(copy, "__pydantic_private__", None)
    return copy


_COPIERS: dict[type, Callable[[Any], Any]] = {
    dict: _copy_dict,
    FrozenDict: lambda v: FrozenDict(_copy_dict(v)),
    list: lambda v: [deep_copy(x) for x in v],
    FrozenList: lambda v: FrozenList([deep_copy(x) for x in v]),
    tuple: lambda v: tuple([deep_copy(x) for x in v]),
}
_SHARED = {str, int, float, bool, type(None)}
"""Immutable types shared rather than copied (enum classes join on first sight)."""


def deep_copy(value: Any) -> Any:
    """A deep copy of scenario data: JSON containers, read-only containers, tuples and our
    frozen pydantic models. Strings, numbers and enum members are immutable and shared."""
    kind = type(value)
    if kind in _SHARED:
        return value
    copier = _COPIERS.get(kind)
    if copier is None:
        if isinstance(value, BaseModel):
            copier = _copy_model
        elif isinstance(value, Enum):
            _SHARED.add(kind)
            copier = _same
        else:
            raise TypeError(f"cannot isolate a {kind.__name__} in scenario data")
        _COPIERS[kind] = copier
    return copier(value)


def executed_digest(
    view: BaseModel, initial_state: Mapping[str, Any], injections: Sequence[BaseModel]
) -> str:
    """`sha256:` of what an episode ran: the adapter's view, the initial state and the
    scheduled faults, as canonical JSON."""
    blob = json.dumps(
        {
            "view": view.model_dump(mode="json"),
            "initial_state": initial_state,
            "injections": [i.model_dump(mode="json") for i in injections],
        },
        sort_keys=True,
        separators=(",", ":"),
        default=_plain,
    )
    return "sha256:" + hashlib.sha256(blob.encode("utf-8", "backslashreplace")).hexdigest()


def _plain(value: object) -> object:
    # An adapter may have put anything into its copy; the digest must still be computable.
    if isinstance(value, Mapping):
        return dict(value)
    return repr(value)
