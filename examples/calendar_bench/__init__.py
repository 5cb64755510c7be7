"""A stand-in for *your* benchmark: a tiny meeting-room calendar with its own grader.

Nothing here knows about cavbench. `CalendarEnv` is the environment an agent acts in,
`Grader` is the benchmark's reward function (it replays the gold actions on a fresh
environment and compares databases), and `TASKS` are the tasks. `examples/calendar_audit.py`
shows how to put this oracle under cavbench's audit.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

ROOMS = ("atlas", "borealis", "cirrus")
SLOTS = ("09", "10", "11", "14", "15")


def _initial() -> dict[str, Any]:
    bookings = {
        "b1": {"room": "atlas", "slot": "09", "who": "ana"},
        "b2": {"room": "borealis", "slot": "10", "who": "ben"},
        "b3": {"room": "cirrus", "slot": "14", "who": "cho"},
    }
    return {"bookings": bookings, "next_id": 4}


TASKS: list[dict[str, Any]] = [
    {
        "id": "cal-1",
        "kind": "book",
        "gold": [("book", {"room": "atlas", "slot": "10", "who": "dee"})],
    },
    {
        "id": "cal-2",
        "kind": "book",
        "gold": [("book", {"room": "cirrus", "slot": "11", "who": "eli"})],
    },
    {"id": "cal-3", "kind": "cancel", "gold": [("cancel", {"booking_id": "b2"})]},
    {"id": "cal-4", "kind": "cancel", "gold": [("cancel", {"booking_id": "b3"})]},
    {
        "id": "cal-5",
        "kind": "move",
        "gold": [
            ("cancel", {"booking_id": "b1"}),
            ("book", {"room": "atlas", "slot": "15", "who": "ana"}),
        ],
    },
    {
        "id": "cal-6",
        "kind": "move",
        "gold": [
            ("cancel", {"booking_id": "b2"}),
            ("book", {"room": "cirrus", "slot": "09", "who": "ben"}),
        ],
    },
    {
        "id": "cal-7",
        "kind": "book",
        "gold": [
            ("book", {"room": "borealis", "slot": "14", "who": "fay"}),
            ("book", {"room": "borealis", "slot": "15", "who": "fay"}),
        ],
    },
    {"id": "cal-8", "kind": "cancel", "gold": [("cancel", {"booking_id": "b1"})]},
]


class CalendarEnv:
    """The environment: a bookings database and the history of tool calls."""

    def __init__(self) -> None:
        self.db = _initial()
        self.history: list[tuple[str, dict[str, Any]]] = []

    def step(self, tool: str, args: dict[str, Any]) -> str:
        self.history.append((tool, dict(args)))
        bookings = self.db["bookings"]
        if tool == "book":
            taken = any(
                b["room"] == args.get("room") and b["slot"] == args.get("slot")
                for b in bookings.values()
            )
            if taken or args.get("room") not in ROOMS or args.get("slot") not in SLOTS:
                return "error: unavailable"
            bid = f"b{self.db['next_id']}"
            self.db["next_id"] += 1
            bookings[bid] = {"room": args["room"], "slot": args["slot"], "who": args.get("who")}
            return bid
        if tool == "cancel":
            return "ok" if bookings.pop(str(args.get("booking_id")), None) else "error: no booking"
        return "ok"  # "message" and anything else: no effect


class Grader:
    """The benchmark's reward: replay the gold actions on a fresh environment, compare.

    `cache_by` chooses the key under which the expected database is cached. "id" is
    right; "kind" is a plausible bug (tasks of one kind share an expected state).
    """

    def __init__(self, cache_by: str = "id") -> None:
        self.cache_by = cache_by
        self._expected: dict[str, str] = {}

    def grade(
        self, env: CalendarEnv, task: dict[str, Any], hook: Callable[[], None] | None = None
    ) -> dict[str, Any]:
        key = str(task[self.cache_by])
        if key not in self._expected:
            gold = CalendarEnv()
            for tool, args in task["gold"]:
                gold.step(tool, args)
            self._expected[key] = json.dumps(gold.db, sort_keys=True)
        if hook is not None:  # the one line an audit needs: a probe point inside scoring
            hook()
        match = json.dumps(env.db, sort_keys=True) == self._expected[key]
        return {"reward": 1.0 if match else 0.0, "db_match": match}
