"""The side-effect ledger (SPEC b.3) and the fault scheduler (SPEC a.5, b.2)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from cavbench.runtime import FaultScheduler, Ledger
from cavbench.scenarios import Injection


def row(ledger: Ledger, key: str | None, op: str = "op-1", seq: int = 1) -> Any:
    return ledger.build(
        seq=seq,
        effect_type="refund",
        logical_operation_id=op,
        idempotency_key=key,
        resource_ref="payment:P-1",
        payload={"amount": 5},
    )


def test_same_key_is_deduplicated_and_the_original_returned() -> None:
    ledger = Ledger()
    first, appended = ledger.append(row(ledger, "k"))
    again, appended_again = ledger.append(row(ledger, "k", seq=9))
    assert appended
    assert not appended_again
    assert again is first
    assert ledger.rows == (first,)


def test_fresh_keys_for_one_logical_operation_duplicate() -> None:
    ledger = Ledger()
    ledger.append(row(ledger, "S:op-1:attempt1"))
    ledger.append(row(ledger, "S:op-1:attempt2"))
    assert [r.logical_operation_id for r in ledger.rows] == ["op-1", "op-1"]
    assert len(ledger) == 2


def test_keyless_rows_always_append() -> None:
    ledger = Ledger()
    for key in (None, "", None, ""):
        _, appended = ledger.append(row(ledger, key))
        assert appended
    assert len(ledger) == 4


def test_effect_ids_count_every_built_row() -> None:
    ledger = Ledger()
    ledger.append(row(ledger, "k"))  # eff-0
    ledger.append(row(ledger, "k"))  # eff-1, deduplicated
    unused = row(ledger, "other")  # eff-2, never appended
    kept, _ = ledger.append(row(ledger, "new"))  # eff-3
    assert unused.effect_id == "eff-2"
    assert [r.effect_id for r in ledger.rows] == ["eff-0", "eff-3"]
    assert kept.effect_id == "eff-3"


@given(keys=st.lists(st.sampled_from([None, "", "a", "b", "c"]), max_size=12))
def test_ledger_rows_equal_a_model(keys: list[str | None]) -> None:
    ledger = Ledger()
    seen: set[str] = set()
    expected: list[str] = []
    for n, key in enumerate(keys):
        ledger.append(row(ledger, key))
        if key and key in seen:
            continue
        if key:
            seen.add(key)
        expected.append(f"eff-{n}")
    assert [r.effect_id for r in ledger.rows] == expected
    assert ledger.rows == tuple(ledger.rows)  # a snapshot, not the live list


def inj(fault_id: str, hook: str, ordinal: int = 1) -> Injection:
    return Injection(fault_id=fault_id, hook=hook, ordinal=ordinal, mode="ambiguous_response")


def test_injections_fire_once_on_the_first_time_their_hook_is_reached() -> None:
    scheduler = FaultScheduler([inj("f1", "after_read:a:1", ordinal=3)])
    assert scheduler.fire("after_read:b:1") == []
    assert [i.fault_id for i in scheduler.fire("after_read:a:1")] == ["f1"]
    assert scheduler.fire("after_read:a:1") == []
    assert scheduler.fire("after_read:a:1") == []
    assert scheduler.fired == ("f1",)


def test_ordinal_orders_injections_sharing_a_hook_then_fault_id() -> None:
    hook = "before_commit_step:w1"
    scheduler = FaultScheduler(
        [
            inj("z", hook, 1),
            inj("b", hook, 2),
            inj("a", hook, 2),
            inj("m", hook, 0),
            inj("x", "other"),
        ]
    )
    assert [i.fault_id for i in scheduler.fire(hook)] == ["m", "z", "a", "b"]
    assert scheduler.fired == ("m", "z", "a", "b")
    assert [i.fault_id for i in scheduler.fire("other")] == ["x"]
    assert scheduler.fired == ("m", "z", "a", "b", "x")


@given(
    plan=st.lists(st.tuples(st.sampled_from(["h1", "h2", "h3"]), st.integers(-2, 4)), max_size=6),
    calls=st.lists(st.sampled_from(["h1", "h2", "h3", "h4"]), max_size=10),
)
def test_every_injection_fires_at_most_once(plan: list[tuple[str, int]], calls: list[str]) -> None:
    injections = [inj(f"f{n}", hook, ordinal) for n, (hook, ordinal) in enumerate(plan)]
    scheduler = FaultScheduler(injections)
    fired: list[str] = []
    for hook in calls:
        fired.extend(i.fault_id for i in scheduler.fire(hook))
    assert len(fired) == len(set(fired))
    reached = set(calls)
    assert set(fired) == {i.fault_id for i in injections if i.hook in reached}
    assert scheduler.fired == tuple(fired)
