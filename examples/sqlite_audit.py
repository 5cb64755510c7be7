"""Where an oracle that calls a database puts the INV-4 hook: a bare protocol target.

The benchmark's world is an SQLite database (one `accounts` table); its grader replays the
gold statements inside a savepoint on the *live* connection, dumps the expected table and
rolls back. The INV-4 point is after the writes and before the rollback: `probe()` there
raises once, and the audit asks that the database is as before and the next verdict clean.

    cavbench audit run --target examples.sqlite_audit:make_target --out out/audit-sqlite
    cavbench audit run --target examples.sqlite_audit:make_unsafe_target --out out/audit-bad

The first passes all eight checks; the second rolls back without `finally`, so the fault
leaves the gold writes in the agent's database: INV-4 fails and the command exits 2.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from cavbench.audit import Action, ActionKind, Component, Probe, ScoreResult, StateDigest, digest_of

_START = (("ana", 100), ("bo", 50), ("cy", 0))
_TASKS: dict[str, tuple[Action, ...]] = {
    "pay-bo": (Action("transfer", {"src": "ana", "dst": "bo", "amount": 30}),),
    "pay-cy": (
        Action("transfer", {"src": "ana", "dst": "cy", "amount": 10}),
        Action("transfer", {"src": "bo", "dst": "cy", "amount": 5}),
    ),
    "close-cy": (Action("close", {"name": "cy"}),),
}
_CLOSE = Action("end", {}, ActionKind.CLOSE)


def _statements(action: Action) -> list[tuple[str, tuple[object, ...]]]:
    a = action.args
    if action.name == "transfer":
        return [
            ("UPDATE accounts SET balance = balance - ? WHERE name = ?", (a["amount"], a["src"])),
            ("UPDATE accounts SET balance = balance + ? WHERE name = ?", (a["amount"], a["dst"])),
        ]
    if action.name == "close":
        return [("DELETE FROM accounts WHERE name = ?", (a["name"],))]
    return []


class SqliteTarget:
    """The database benchmark behind the audit protocol (no kit: checks only)."""

    def __init__(self, *, safe: bool = True) -> None:
        self._safe = safe
        self._conn = sqlite3.connect(":memory:", isolation_level=None)
        self._task = "pay-bo"
        self._log: list[Action] = []
        self._probe: Probe | None = None

    @property
    def name(self) -> str:
        return "sqlite" if self._safe else "sqlite-unsafe"

    def tasks(self) -> Sequence[str]:
        return list(_TASKS)

    def reference(self, task: str) -> Sequence[Action]:
        return _TASKS[task]

    def closing_action(self, task: str) -> Action | None:
        return _CLOSE

    def reset(self, task: str) -> None:
        self._task, self._log = task, []
        self._conn.execute("DROP TABLE IF EXISTS accounts")
        self._conn.execute("CREATE TABLE accounts (name TEXT PRIMARY KEY, balance INTEGER)")
        self._conn.executemany("INSERT INTO accounts VALUES (?, ?)", _START)

    def apply(self, action: Action) -> None:
        self._log.append(action)
        for sql, params in _statements(action):
            self._conn.execute(sql, params)
        if action.kind is ActionKind.CLOSE:
            self.score()

    def _dump(self) -> list[tuple[object, ...]]:
        return list(self._conn.execute("SELECT name, balance FROM accounts ORDER BY name"))

    def score(self) -> ScoreResult:
        probe, self._probe = self._probe, None
        agent = self._dump()
        cur = self._conn.cursor()
        cur.execute("SAVEPOINT grade")
        if not self._safe:  # the bug: the rollback is skipped when anything raises
            self._replay_gold(cur, probe)
            expected = self._dump()
            cur.execute("ROLLBACK TO grade")
            cur.execute("RELEASE grade")
        else:
            try:
                self._replay_gold(cur, probe)
                expected = self._dump()
            finally:
                cur.execute("ROLLBACK TO grade")
                cur.execute("RELEASE grade")
        return ScoreResult(agent == expected, (Component("db", agent == expected),))

    def _replay_gold(self, cur: sqlite3.Cursor, probe: Probe | None) -> None:
        cur.execute("DELETE FROM accounts")
        cur.executemany("INSERT INTO accounts VALUES (?, ?)", _START)
        for action in _TASKS[self._task]:
            for sql, params in _statements(action):
                cur.execute(sql, params)
        if probe is not None:
            probe()  # the INV-4 point: the database is touched and not yet rolled back

    def read_state(self) -> StateDigest:
        return StateDigest(
            world=digest_of([list(row) for row in self._dump()]),
            log=tuple(a.digest for a in self._log),
        )

    def arm_fault(self, probe: Probe) -> None:
        self._probe = probe


def make_target() -> SqliteTarget:
    return SqliteTarget()


def make_unsafe_target() -> SqliteTarget:
    return SqliteTarget(safe=False)
