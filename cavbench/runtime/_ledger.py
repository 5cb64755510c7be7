"""Append-only side-effect ledger with idempotency-key deduplication (SPEC b.3)."""

from __future__ import annotations

from cavbench.trace import JSONObject, LedgerRow


class Ledger:
    """Rows are only ever appended. A row whose non-empty key is already indexed is not
    appended (the original is returned); keyless rows always append. Effect ids count every
    row *built*, deduplicated or not, as CAV-Bench does."""

    __slots__ = ("_by_key", "_counter", "_rows")

    def __init__(self) -> None:
        self._rows: list[LedgerRow] = []
        self._by_key: dict[str, LedgerRow] = {}
        self._counter = 0

    def build(
        self,
        seq: int,
        effect_type: str,
        logical_operation_id: str,
        idempotency_key: str | None,
        resource_ref: str,
        payload: JSONObject,
        compensation_for: str | None = None,
    ) -> LedgerRow:
        number = self._counter  # eff-0 first, as CAV-Bench numbers them
        self._counter += 1
        fields = (
            f"eff-{number}",
            seq,
            effect_type,
            logical_operation_id,
            idempotency_key,
            resource_ref,
            payload,
            compensation_for,
        )
        return tuple.__new__(LedgerRow, fields)  # skips the generated `__new__`: hot path

    def append(self, row: LedgerRow) -> tuple[LedgerRow, bool]:
        """Append unless deduplicated; returns the row on record and whether it was appended."""
        key = row.idempotency_key
        if key:
            existing = self._by_key.get(key)
            if existing is not None:
                return existing, False
            self._by_key[key] = row
        self._rows.append(row)
        return row, True

    @property
    def rows(self) -> tuple[LedgerRow, ...]:
        return tuple(self._rows)

    def __len__(self) -> int:
        return len(self._rows)
