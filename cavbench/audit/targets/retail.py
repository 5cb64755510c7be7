"""A small retail-like domain with a replay-style oracle, in a defective and a repaired version.

Orders (with items, an address and a payment method), payments (card refunds, gift-card
balances) and a few tools: cancel or modify a pending order, return or exchange items of a
delivered one, and ``respond`` to the user. Every task starts from the same database.

The reward replays the task's reference actions and compares database hashes, plus, for
tasks that ask a question, whether the answer was said. Two oracles:

- :class:`DefectiveRetailOracle` has the shape of the published defect: it hashes the agent's
  database, then resets the *live* world and replays the reference through it to get the gold
  hash, and never restores the agent's state. Its first verdict is right; anyone who reads
  the state (or scores) afterwards sees the reference state.
- :class:`RetailOracle` (repaired) replays the reference on a fresh world.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from cavbench.audit._kit import OracleEnv, World, replay
from cavbench.audit._protocol import (
    JSON,
    Action,
    ActionKind,
    AuditError,
    Component,
    JSONObject,
    ScoreResult,
    StateDigest,
    copy_object,
    digest_of,
)

DB_COMPONENT: Final = "db"
OUTPUTS_COMPONENT: Final = "outputs"
CANCEL_REASONS: Final = ("no longer needed", "ordered by mistake")

_PRODUCTS: Final[dict[str, dict[str, int]]] = {
    "kettle": {"steel": 3900, "glass": 4500, "copper": 6100},
    "lamp": {"white": 2500, "black": 2500, "brass": 4200},
    "backpack": {"s": 5400, "m": 5900, "l": 6400},
    "headphones": {"wired": 3000, "wireless": 8900},
    "mug": {"red": 900, "blue": 900, "green": 1100},
}


def _initial_db() -> JSONObject:
    """The shared starting database: 16 orders over 8 payment methods."""
    products = list(_PRODUCTS)
    orders: JSONObject = {}
    payments: JSONObject = {}
    for p in range(8):
        pid = f"pay-{p + 1:02d}"
        payments[pid] = (
            {"method": "gift_card", "balance": 5000 + 1000 * p, "refunds": []}
            if p % 2
            else {"method": "card", "refunds": []}
        )
    for n in range(16):
        oid = f"o{n + 1:02d}"
        items: JSONObject = {}
        for k in range(2 + n % 3):
            product = products[(n + 2 * k) % len(products)]
            variant = sorted(_PRODUCTS[product])[(n + k) % len(_PRODUCTS[product])]
            items[f"{oid}-i{k + 1}"] = {
                "product": product,
                "variant": variant,
                "price": _PRODUCTS[product][variant],
            }
        orders[oid] = {
            "status": "pending" if n % 2 == 0 else "delivered",
            "items": items,
            "address": {"city": f"City{n % 5}", "zip": f"{10000 + 37 * n}"},
            "payment_id": f"pay-{n % 8 + 1:02d}",
        }
    return {"orders": orders, "payments": payments}


INITIAL_DB: Final[JSONObject] = _initial_db()


def _obj(value: JSON) -> JSONObject:
    return value if isinstance(value, dict) else {}


def _order_total(order: JSONObject, item_ids: list[str] | None = None) -> int:
    total = 0
    for iid, item in _obj(order.get("items")).items():
        if item_ids is None or iid in item_ids:
            price = _obj(item).get("price")
            total += price if isinstance(price, int) else 0
    return total


def _refund(db: JSONObject, pid: str, order_id: str, amount: int) -> None:
    payment = _obj(_obj(db["payments"]).get(pid))
    if payment.get("method") == "gift_card" and isinstance(payment.get("balance"), int):
        balance = payment["balance"]
        assert isinstance(balance, int)
        payment["balance"] = balance + amount
    else:
        refunds = payment.setdefault("refunds", [])
        assert isinstance(refunds, list)
        refunds.append({"order_id": order_id, "amount": amount})


def apply_retail_action(db: JSONObject, action: Action) -> str | None:
    """Apply one tool call to ``db`` in place; returns an error text or None.

    Invalid calls change nothing (the tool answers with an error, as the source benchmark's
    tools do).
    """
    args = action.args
    orders = _obj(db["orders"])
    oid = str(args.get("order_id", ""))
    order = orders.get(oid)
    match action.name:
        case "get_order" | "respond":
            return None if action.name == "respond" or order is not None else "no such order"
        case _ if not isinstance(order, dict):
            return "no such order"
        case "cancel_pending_order":
            if order.get("status") != "pending":
                return "order is not pending"
            if args.get("reason") not in CANCEL_REASONS:
                return "reason must be one of " + ", ".join(CANCEL_REASONS)
            order["status"] = "cancelled"
            order["cancel_reason"] = args["reason"]
            _refund(db, str(order["payment_id"]), oid, _order_total(order))
            return None
        case "modify_pending_order_address":
            if order.get("status") != "pending":
                return "order is not pending"
            order["address"] = {"city": str(args.get("city")), "zip": str(args.get("zip"))}
            return None
        case "modify_pending_order_item":
            item = _obj(order.get("items")).get(str(args.get("item_id")))
            if order.get("status") != "pending" or not isinstance(item, dict):
                return "order is not pending or has no such item"
            prices = _PRODUCTS.get(str(item.get("product")), {})
            new_variant = str(args.get("new_variant"))
            if new_variant not in prices or new_variant == item.get("variant"):
                return "no such (different) variant"
            old_price = item.get("price")
            item["variant"] = new_variant
            item["price"] = prices[new_variant]
            if isinstance(old_price, int) and old_price > prices[new_variant]:
                _refund(db, str(order["payment_id"]), oid, old_price - prices[new_variant])
            return None
        case "return_delivered_order_items":
            raw = args.get("item_ids")
            item_ids = sorted(str(i) for i in raw) if isinstance(raw, list) else []
            items = _obj(order.get("items"))
            if order.get("status") != "delivered" or not item_ids:
                return "order is not delivered or no items given"
            if any(i not in items for i in item_ids):
                return "no such item"
            order["status"] = "return_requested"
            order["return"] = {"item_ids": list(item_ids)}
            _refund(db, str(order["payment_id"]), oid, _order_total(order, item_ids))
            return None
        case "exchange_delivered_order_item":
            item = _obj(order.get("items")).get(str(args.get("item_id")))
            if order.get("status") != "delivered" or not isinstance(item, dict):
                return "order is not delivered or has no such item"
            new_variant = str(args.get("new_variant"))
            if new_variant not in _PRODUCTS.get(str(item.get("product")), {}):
                return "no such variant"
            order["status"] = "exchange_requested"
            order["exchange"] = {"item_id": str(args["item_id"]), "new_variant": new_variant}
            return None
        case _:
            return f"unknown tool {action.name!r}"


def _resource_digests(db: JSONObject) -> dict[str, str]:
    return {
        f"{coll}/{rid}": digest_of(value)
        for coll, items in db.items()
        if isinstance(items, dict)
        for rid, value in items.items()
    }


class RetailWorld(World):
    """The live retail database of one episode.

    The world digest is taken over per-resource digests that are recomputed only for the
    order (and its payment) an action touched: hashing the whole database on every
    ``read_state`` dominated the audit's run time.
    """

    def __init__(self, initial: JSONObject, digests: dict[str, str] | None = None) -> None:
        super().__init__()
        self._initial = initial
        self._initial_digests = digests if digests is not None else _resource_digests(initial)
        self._reset()

    def _reset(self) -> None:
        # Copy on write: the collections are shallow copies whose resources are shared with
        # the initial database until an action changes one (then that one is copied). A
        # world costs two dict copies instead of a deep copy of the database.
        self._db: JSONObject = {coll: dict(_obj(items)) for coll, items in self._initial.items()}
        self._owned: set[tuple[str, str]] = set()
        self._digests = dict(self._initial_digests)
        self._world: str | None = None

    def _own(self, coll: str, rid: str) -> None:
        items = _obj(self._db.get(coll))
        if (coll, rid) not in self._owned and isinstance(items.get(rid), dict):
            items[rid] = copy_object(_obj(items[rid]))
            self._owned.add((coll, rid))
        self._digests.pop(f"{coll}/{rid}", None)
        self._world = None

    def apply_effect(self, action: Action) -> None:
        if action.name in _READ_ONLY:
            return
        oid = str(action.args.get("order_id", ""))
        order = _obj(self._db["orders"]).get(oid)
        if not isinstance(order, dict):
            return  # no such order: every tool answers with an error and changes nothing
        self._own("orders", oid)
        self._own("payments", str(order.get("payment_id")))
        apply_retail_action(self._db, action)

    def state(self) -> JSONObject:
        return copy_object(self._db)

    def peek(self) -> JSONObject:
        return self._db

    def digest(self) -> StateDigest:
        if self._world is None:
            for coll, items in self._db.items():
                if isinstance(items, dict):
                    for rid, value in items.items():
                        key = f"{coll}/{rid}"
                        if key not in self._digests:
                            self._digests[key] = digest_of(value)
            self._world = digest_of(sorted(self._digests.items()))
        return StateDigest(world=self._world, log=tuple(a.digest for a in self.log()))

    def reset_world(self) -> None:
        self._reset()

    def _take(self, other: RetailWorld) -> None:
        self._db = {coll: dict(_obj(items)) for coll, items in other._db.items()}
        for coll, rid in other._owned:  # owned resources are copied again, never shared
            items = _obj(self._db[coll])
            items[rid] = copy_object(_obj(items[rid]))
        self._owned = set(other._owned)
        self._digests = dict(other._digests)
        self._world = other._world
        self._log = list(other._log)

    def copy(self) -> RetailWorld:
        other = RetailWorld(self._initial, self._initial_digests)
        other._take(self)
        return other

    def load(self, other: World) -> None:
        if not isinstance(other, RetailWorld):
            raise AuditError("RetailWorld.load: expected a RetailWorld checkpoint")
        self._take(other)


_READ_ONLY: Final = frozenset({"get_order", "respond"})


@dataclass(frozen=True, slots=True)
class RetailTask:
    """One task: what the user asks, the reference actions and the answers it must contain."""

    task_id: str
    instruction: str
    actions: tuple[Action, ...]
    outputs: tuple[str, ...] = ()


def _get(oid: str) -> Action:
    return Action("get_order", {"order_id": oid})


def _say(text: str) -> Action:
    return Action("respond", {"message": text})


def _order(oid: str) -> JSONObject:
    return _obj(_obj(INITIAL_DB["orders"])[oid])


def _items(oid: str) -> list[str]:
    return sorted(_obj(_order(oid)["items"]))


def _other_variant(oid: str, iid: str) -> str:
    item = _obj(_obj(_order(oid)["items"])[iid])
    variants = sorted(_PRODUCTS[str(item["product"])])
    return next(v for v in variants if v != item["variant"])


def _cancel(oid: str, reason: str = CANCEL_REASONS[0]) -> Action:
    return Action("cancel_pending_order", {"order_id": oid, "reason": reason})


def _address(oid: str, city: str) -> Action:
    return Action("modify_pending_order_address", {"order_id": oid, "city": city, "zip": "99999"})


def _modify(oid: str, iid: str) -> Action:
    return Action(
        "modify_pending_order_item",
        {"order_id": oid, "item_id": iid, "new_variant": _other_variant(oid, iid)},
    )


def _return(oid: str, iids: list[str]) -> Action:
    return Action("return_delivered_order_items", {"order_id": oid, "item_ids": list(iids)})


def _exchange(oid: str, iid: str) -> Action:
    return Action(
        "exchange_delivered_order_item",
        {"order_id": oid, "item_id": iid, "new_variant": _other_variant(oid, iid)},
    )


def _build_tasks() -> tuple[RetailTask, ...]:
    pending = [f"o{n:02d}" for n in range(1, 17, 2)]
    delivered = [f"o{n:02d}" for n in range(2, 17, 2)]
    tasks: list[RetailTask] = []

    def add(instruction: str, actions: list[Action], outputs: tuple[str, ...] = ()) -> None:
        tasks.append(
            RetailTask(f"retail-{len(tasks) + 1:03d}", instruction, tuple(actions), outputs)
        )

    for oid in pending[:4]:
        add(f"Cancel order {oid}; I no longer need it.", [_get(oid), _cancel(oid), _say("done")])
    for i, oid in enumerate(pending[4:8]):
        add(
            f"Ship order {oid} to City{9 - i} instead.",
            [_get(oid), _address(oid, f"City{9 - i}"), _say("address updated")],
        )
    for oid in pending[:4]:
        iid = _items(oid)[0]
        add(f"Switch item {iid} of {oid} to another variant.", [_get(oid), _modify(oid, iid)])
    for oid in delivered[:4]:
        iids = _items(oid)[:1]
        add(f"Return {iids[0]} from {oid}.", [_get(oid), _return(oid, iids), _say("return filed")])
    for oid in delivered[4:7]:
        iid = _items(oid)[-1]
        add(f"Exchange {iid} of {oid}.", [_get(oid), _exchange(oid, iid)])
    for a, b in zip(pending[4:8], pending[:4], strict=True):
        add(
            f"Cancel {b} (bought by mistake) and ship {a} to City7.",
            [
                _get(b),
                _cancel(b, CANCEL_REASONS[1]),
                _get(a),
                _address(a, "City7"),
                _say("both done"),
            ],
        )
    for oid in pending[5:8]:
        first, second = _items(oid)[:2]
        add(
            f"Switch items {first} and {second} of {oid} to other variants.",
            [_get(oid), _modify(oid, first), _modify(oid, second), _say("both switched")],
        )
    for a, b in zip(delivered[:3], delivered[5:8], strict=True):
        iid = _items(b)[0]
        add(
            f"Return everything from {a} and exchange {iid} of {b}.",
            [_get(a), _return(a, _items(a)), _get(b), _exchange(b, iid)],
        )
    for oid in delivered[3:7]:
        total = _order_total(_order(oid))
        add(
            f"What did order {oid} cost in total (in cents)?",
            [_get(oid), _say(f"Order {oid} cost {total} cents.")],
            (str(total),),
        )
    for oid in pending[6:8]:
        total = _order_total(_order(oid))
        add(
            f"Cancel {oid} and tell me how much will be refunded (in cents).",
            [_get(oid), _cancel(oid), _say(f"{total} cents will be refunded.")],
            (str(total),),
        )
    return tuple(tasks)


TASKS: Final[tuple[RetailTask, ...]] = _build_tasks()
_BY_ID: Final[Mapping[str, RetailTask]] = {t.task_id: t for t in TASKS}
CLOSING_ACTION: Final = Action("end_session", {}, ActionKind.CLOSE)
_INITIAL_DIGESTS: Final = _resource_digests(INITIAL_DB)


class RetailDomain:
    """The retail domain: 35 tasks over one shared starting database."""

    name = "retail"
    primary_component = DB_COMPONENT

    def tasks(self) -> tuple[str, ...]:
        return tuple(_BY_ID)

    def spec(self, task: str) -> RetailTask:
        try:
            return _BY_ID[task]
        except KeyError:
            raise AuditError(f"retail: no task {task!r} (fix: see `cavbench audit list`)") from None

    def reference(self, task: str) -> tuple[Action, ...]:
        return self.spec(task).actions

    def closing_action(self, task: str) -> Action | None:
        return CLOSING_ACTION

    def new_world(self, task: str) -> RetailWorld:
        self.spec(task)
        return RetailWorld(INITIAL_DB, _INITIAL_DIGESTS)


def _said(log: tuple[Action, ...]) -> str:
    return " ".join(str(a.args.get("message", "")) for a in log if a.name == "respond").replace(
        ",", ""
    )


def _components(db_match: bool, task: RetailTask, log: tuple[Action, ...]) -> ScoreResult:
    comps = [Component(DB_COMPONENT, db_match)]
    if task.outputs:
        said = _said(log).lower()
        comps.append(Component(OUTPUTS_COMPONENT, all(o.lower() in said for o in task.outputs)))
    return ScoreResult(all(c.passed for c in comps), tuple(comps))


class RetailOracle:
    """The repaired reward: replay the reference on a fresh world, compare hashes."""

    name = "repaired"

    def __init__(self, domain: RetailDomain) -> None:
        self._domain = domain

    def score(self, env: OracleEnv) -> ScoreResult:
        gold = replay(env.fresh(), env.reference)
        env.probe()
        match = env.live.digest().world == gold.digest().world
        return _components(match, self._domain.spec(env.task), env.live.log())


class DefectiveRetailOracle:
    """The reward with the published defect's shape: the live world is the gold scratchpad.

    It hashes the agent's database first (so its first verdict is right), then reloads the
    live database, replays the reference through the live environment (which also logs the
    reference actions) and never restores what the agent left.
    """

    name = "defective"

    def __init__(self, domain: RetailDomain) -> None:
        self._domain = domain

    def score(self, env: OracleEnv) -> ScoreResult:
        live = env.live
        agent_hash = live.digest().world
        agent_log = live.log()
        live.reset_world()
        replay(live, env.reference)
        env.probe()
        gold_hash = live.digest().world
        return _components(agent_hash == gold_hash, self._domain.spec(env.task), agent_log)
