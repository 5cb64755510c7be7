"""A stand-in for a third-party tool-use benchmark: a small shop with a customer-service agent.

Nothing here knows about cavbench. `ShopEnv` is the environment (a JSON database and the
history of tool calls), `step` runs one tool, `TASKS` are the tasks with their gold
actions, and the reward replays the gold actions and compares database hashes, the shape of
tau-bench's reward:

- `calculate_reward` is the benchmark's reward as first written: it hashes the agent's
  database, reloads the *live* environment's data, replays the gold actions through it and
  hashes again, and never restores what the agent left (the reset-without-restore defect);
- `calculate_reward_repaired` replays the gold actions on a new environment.

Both take an optional `hook`, called once after the gold actions were replayed (state has
been touched) and before the hashes are compared: the one line an audit needs.
`examples/shop_audit.py` puts both under cavbench's audit.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

CLOSE_TOOL = "close_ticket"
"""The tool that ends a conversation: it closes the support ticket (a state change)."""


def load_data() -> dict[str, Any]:
    """The starting database: products with stock, users with store credit, orders."""
    return {
        "products": {
            "p-tea": {"name": "green tea", "price": 450, "stock": 10},
            "p-pot": {"name": "teapot", "price": 3200, "stock": 2},
            "p-cup": {"name": "cup", "price": 800, "stock": 0},
        },
        "users": {
            "u-ana": {"credit": 5000, "orders": ["o-1"]},
            "u-bo": {"credit": 0, "orders": ["o-2"]},
        },
        "orders": {
            "o-1": {"user": "u-ana", "items": {"p-tea": 2}, "status": "placed"},
            "o-2": {"user": "u-bo", "items": {"p-pot": 1}, "status": "shipped"},
        },
        "tickets": {"t-1": {"status": "open"}},
    }


class ShopEnv:
    """The environment: `data` (the database) and `history` (every tool call)."""

    def __init__(self) -> None:
        self.data = load_data()
        self.history: list[dict[str, Any]] = []

    def step(self, tool: str, args: dict[str, Any]) -> str:
        """Log one tool call and run it."""
        self.history.append({"tool": tool, "args": dict(args)})
        return self.run_tool(tool, args)

    def run_tool(self, tool: str, args: dict[str, Any]) -> str:
        """Run one tool; invalid calls answer with an error and change nothing."""
        handler = _TOOLS.get(tool)
        return handler(self.data, args) if handler else f"error: unknown tool {tool}"


def _order(data: dict[str, Any], user: str, product: str, qty: int) -> str:
    item = data["products"].get(product)
    if item is None or data["users"].get(user) is None or not 0 < qty <= item["stock"]:
        return "error: cannot order"
    oid = f"o-{len(data['orders']) + 1}"
    item["stock"] -= qty
    data["orders"][oid] = {"user": user, "items": {product: qty}, "status": "placed"}
    data["users"][user]["orders"].append(oid)
    return oid


def _cancel(data: dict[str, Any], oid: str) -> str:
    order = data["orders"].get(oid)
    if order is None or order["status"] != "placed":
        return "error: only placed orders can be cancelled"
    order["status"] = "cancelled"
    for product, qty in order["items"].items():
        data["products"][product]["stock"] += qty
        data["users"][order["user"]]["credit"] += qty * data["products"][product]["price"]
    return "cancelled"


_TOOLS: dict[str, Callable[[dict[str, Any], dict[str, Any]], str]] = {
    "get_order": lambda d, a: json.dumps(d["orders"].get(a.get("order_id"), "error: no order")),
    "place_order": lambda d, a: _order(d, a.get("user", ""), a.get("product", ""), a.get("qty", 0)),
    "cancel_order": lambda d, a: _cancel(d, a.get("order_id", "")),
    "respond": lambda d, a: "ok",
    CLOSE_TOOL: lambda d, a: d["tickets"].update({"t-1": {"status": "closed"}}) or "closed",
}


@dataclass(frozen=True)
class Task:
    """A task: what the user wants, the gold actions, and what the agent must say."""

    task_id: str
    instruction: str
    actions: tuple[tuple[str, dict[str, Any]], ...]
    outputs: tuple[str, ...] = field(default=())


TASKS: tuple[Task, ...] = (
    Task("shop-1", "Ana wants 3 more green teas.",
         (("place_order", {"user": "u-ana", "product": "p-tea", "qty": 3}),)),
    Task("shop-2", "Ana cancels order o-1.",
         (("get_order", {"order_id": "o-1"}), ("cancel_order", {"order_id": "o-1"}))),
    Task("shop-3", "Bo wants a teapot.",
         (("place_order", {"user": "u-bo", "product": "p-pot", "qty": 1}),)),
    Task("shop-4", "Ana cancels o-1 and orders a teapot instead.",
         (("cancel_order", {"order_id": "o-1"}),
          ("place_order", {"user": "u-ana", "product": "p-pot", "qty": 1}))),
    Task("shop-5", "Bo asks what order o-2 contains.",
         (("get_order", {"order_id": "o-2"}), ("respond", {"message": "one teapot"})),
         ("teapot",)),
    Task("shop-6", "Ana orders 2 teas and a teapot, then says how many teas are left.",
         (("place_order", {"user": "u-ana", "product": "p-tea", "qty": 2}),
          ("place_order", {"user": "u-ana", "product": "p-pot", "qty": 1}),
          ("respond", {"message": "8 teas are left"})),
         ("8",)),
)  # fmt: skip
TASKS_BY_ID = {t.task_id: t for t in TASKS}


def data_hash(data: dict[str, Any]) -> str:
    """The reward's hash: the store (tickets are another system and not compared)."""
    store = {k: v for k, v in data.items() if k != "tickets"}
    return hashlib.sha256(json.dumps(store, sort_keys=True).encode()).hexdigest()


def _said(history: list[dict[str, Any]]) -> str:
    return " ".join(str(h["args"].get("message", "")) for h in history if h["tool"] == "respond")


@dataclass(frozen=True)
class RewardInfo:
    reward: float
    db_match: bool
    outputs_ok: bool


def _info(db_match: bool, task: Task, history: list[dict[str, Any]]) -> RewardInfo:
    said = _said(history).lower()
    outputs_ok = all(o.lower() in said for o in task.outputs)
    return RewardInfo(1.0 if db_match and outputs_ok else 0.0, db_match, outputs_ok)


def calculate_reward(
    env: ShopEnv, task: Task, hook: Callable[[], None] | None = None
) -> RewardInfo:
    """The reward as first written: replay the gold actions *in the live environment*.

    The agent's hash is taken first (so the first verdict is right), then the live data is
    reloaded, the gold actions run through `env.step` (which also logs them), and what the
    agent left is never restored."""
    agent_hash = data_hash(env.data)
    agent_history = list(env.history)
    env.data = load_data()
    for tool, args in task.actions:
        env.step(tool, copy.deepcopy(args))
    if hook is not None:
        hook()
    return _info(agent_hash == data_hash(env.data), task, agent_history)


def calculate_reward_repaired(
    env: ShopEnv,
    task: Task,
    new_env: Callable[[], ShopEnv] = ShopEnv,
    hook: Callable[[], None] | None = None,
) -> RewardInfo:
    """The repaired reward: replay the gold actions on a new environment."""
    gold = new_env()
    for tool, args in task.actions:
        gold.step(tool, copy.deepcopy(args))
    if hook is not None:
        hook()
    return _info(data_hash(env.data) == data_hash(gold.data), task, env.history)
