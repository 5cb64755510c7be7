"""The logical-content checksum ignores layout and sees every value."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cavbench.tables import content_sha256
from cavbench.tables._checksum import file_content_sha256

SCHEMA = pa.schema(
    [
        ("s", pa.string()),
        ("i", pa.int64()),
        ("b", pa.bool_()),
        ("l", pa.list_(pa.string())),
        ("f", pa.float64()),
    ]
)

rows = st.lists(
    st.fixed_dictionaries(
        {
            "s": st.none() | st.text(max_size=8),
            "i": st.none() | st.integers(-(2**62), 2**62),
            "b": st.none() | st.booleans(),
            "l": st.none() | st.lists(st.none() | st.text(max_size=4), max_size=3),
            "f": st.none() | st.floats(allow_nan=False),
        }
    ),
    max_size=30,
)


def _table(data: list[dict[str, object]]) -> pa.Table:
    return pa.Table.from_pylist(data, schema=SCHEMA)


@settings(max_examples=60, deadline=None)
@given(data=rows, cut=st.integers(0, 30))
def test_chunking_and_a_parquet_round_trip_keep_the_checksum(
    tmp_path_factory: pytest.TempPathFactory, data: list[dict[str, object]], cut: int
) -> None:
    table = _table(data)
    digest = content_sha256(table)
    chunked = pa.concat_tables([table.slice(0, cut), table.slice(cut)])
    assert content_sha256(chunked) == digest
    path = tmp_path_factory.mktemp("c") / "t.parquet"
    pq.write_table(table.replace_schema_metadata({"x": "y"}), path, compression="zstd")
    assert content_sha256(pq.read_table(path)) == digest
    assert file_content_sha256(path) == digest


@given(data=rows.filter(bool), index=st.integers(0, 29))
def test_changing_one_value_changes_the_checksum(data: list[dict[str, object]], index: int) -> None:
    index %= len(data)
    changed = [dict(row) for row in data]
    value = changed[index]["i"]
    changed[index]["i"] = 1 if value is None else None
    assert content_sha256(_table(data)) != content_sha256(_table(changed))


def test_null_and_empty_are_different() -> None:
    a = _table([{"s": None, "i": 0, "b": False, "l": None, "f": 0.0}])
    b = _table([{"s": "", "i": 0, "b": False, "l": None, "f": 0.0}])
    c = _table([{"s": None, "i": 0, "b": False, "l": [], "f": 0.0}])
    assert len({content_sha256(a), content_sha256(b), content_sha256(c)}) == 3


def test_values_cannot_slide_between_rows() -> None:
    a = _table(
        [
            {"s": "ab", "i": 1, "b": True, "l": ["x"], "f": 1.0},
            {"s": "c", "i": 1, "b": True, "l": [], "f": 1.0},
        ]
    )
    b = _table(
        [
            {"s": "a", "i": 1, "b": True, "l": [], "f": 1.0},
            {"s": "bc", "i": 1, "b": True, "l": ["x"], "f": 1.0},
        ]
    )
    assert content_sha256(a) != content_sha256(b)
