"""The in-order sliding window behind `max_concurrency`: same output as `map`, bounded memory."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from hypothesis import given, settings
from hypothesis import strategies as st

from cavbench.study._job import ordered_map


@settings(max_examples=40, deadline=None)
@given(items=st.lists(st.integers(), max_size=60), window=st.integers(1, 9))
def test_ordered_map_yields_what_map_yields_in_input_order(items: list[int], window: int) -> None:
    with ThreadPoolExecutor(3) as pool:
        assert list(ordered_map(pool, lambda x: x * 2 + 1, items, window)) == [
            x * 2 + 1 for x in items
        ]


def test_no_more_than_the_window_is_submitted_ahead_of_the_output() -> None:
    started = 0
    lock = threading.Lock()

    def work(i: int) -> int:
        nonlocal started
        with lock:
            started += 1
        if i == 0:
            time.sleep(0.2)  # a slow first episode blocks the in-order output
        return i

    ahead: list[int] = []
    with ThreadPoolExecutor(4) as pool:
        for consumed, value in enumerate(ordered_map(pool, work, range(200), window=8), start=1):
            assert value == consumed - 1
            with lock:
                ahead.append(started - consumed)
    assert max(ahead) <= 8
    assert started == 200
