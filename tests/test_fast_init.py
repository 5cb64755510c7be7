"""`fast_init`: the faster constructor keeps a frozen dataclass's behaviour."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from cavbench.evaluation import Finding, FindingReason
from cavbench.trace import AdapterReport, fast_init


@fast_init
@dataclasses.dataclass(frozen=True, slots=True)
class _Record:
    a: int
    b: str = "b"
    c: list[int] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True, slots=True)
class _Plain:
    a: int
    b: str = "b"
    c: list[int] = dataclasses.field(default_factory=list)


def test_positional_keyword_defaults_and_factories_as_the_dataclass() -> None:
    for args, kwargs in [((1,), {}), ((1, "x"), {}), ((), {"a": 2, "c": [3]}), ((1, "y", [4]), {})]:
        fast, plain = _Record(*args, **kwargs), _Plain(*args, **kwargs)
        assert (fast.a, fast.b, fast.c) == (plain.a, plain.b, plain.c)
    assert _Record(1).c is not _Record(1).c  # a fresh default per instance
    with pytest.raises(TypeError):
        _Record()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        _Record(1, d=2)  # type: ignore[call-arg]


def test_still_frozen_equal_hashable_and_picklable() -> None:
    record = _Record(1, "b", [])
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.a = 2  # type: ignore[misc]
    assert record == _Record(1)
    assert record != _Record(2)
    finding = Finding(FindingReason.RUN_ERROR, "RUN_ERROR", "execution_integrity")
    assert hash(finding) == hash(
        Finding(FindingReason.RUN_ERROR, "RUN_ERROR", "execution_integrity")
    )
    assert pickle.loads(pickle.dumps(finding)) == finding
    assert dataclasses.replace(AdapterReport(), final_message="x").final_message == "x"


def test_refuses_what_it_cannot_keep() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class WithPost:
        a: int

        def __post_init__(self) -> None:
            pass

    with pytest.raises(TypeError, match="__post_init__"):
        fast_init(WithPost)
    with pytest.raises(TypeError, match="slots"):
        fast_init(
            dataclasses.dataclass(frozen=True)(type("NoSlots", (), {"__annotations__": {"a": int}}))
        )
