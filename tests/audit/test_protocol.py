"""The protocol's records: JSON round trips, digests, verdict equality."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cavbench.audit import Action, ActionKind, AuditError, Component, ScoreResult, StateDigest
from cavbench.audit._protocol import canonical_json, copy_object, digest_of, json_copy

json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(max_size=5), json_values, max_size=4)


@given(name=st.text(min_size=1, max_size=10), args=json_objects, kind=st.sampled_from(ActionKind))
def test_action_round_trips_through_json(name: str, args: dict, kind: ActionKind) -> None:
    action = Action(name, args, kind)
    assert Action.from_json(action.as_json()) == action
    assert Action.from_json(action.as_json()).digest == action.digest


def test_action_from_json_rejects_non_object_args() -> None:
    with pytest.raises(AuditError, match="'args' must be an object"):
        Action.from_json({"name": "x", "args": [1]})


@given(value=json_objects)
def test_copies_are_equal_and_detached(value: dict) -> None:
    copied = copy_object(value)
    assert copied == value
    assert json_copy(value) == value
    copied["__new__"] = 1
    assert "__new__" not in value


@given(a=json_objects)
def test_digest_ignores_key_order(a: dict) -> None:
    reordered = dict(reversed(list(a.items())))
    assert digest_of(a) == digest_of(reordered)
    assert canonical_json(a) == canonical_json(reordered)


def test_score_results_compare_verdicts_not_notes() -> None:
    a = ScoreResult(True, (Component("db", True),), note="first")
    b = ScoreResult(True, (Component("db", True),), note="second")
    assert a == b
    assert a != ScoreResult(True, (Component("db", False),))
    assert a.brief() == "PASS[db=P]"
    assert a.component("db") == Component("db", True)
    assert a.component("nope") is None


@given(
    log=st.lists(st.text(max_size=3), max_size=4),
    extra=st.lists(st.text(max_size=3), max_size=3),
)
def test_state_digest_extends_only_by_appending(log: list[str], extra: list[str]) -> None:
    before = StateDigest("w", tuple(log))
    after = StateDigest("w", tuple(log + extra))
    assert after.extends(before, extra=len(extra))
    assert after.extends(before, extra=1) == (len(extra) <= 1)
    assert not StateDigest("other", tuple(log)).extends(before, extra=1)
    if log:
        assert not StateDigest("w", tuple(log[1:])).extends(before, extra=1)


def test_net_uses_effects_when_given() -> None:
    assert StateDigest("w").net == "w"
    assert StateDigest("w", effects="e").net == "e"
