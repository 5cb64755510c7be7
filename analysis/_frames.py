"""Column checks, canonical ordering and the per-task matrix built from an episodes frame."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import polars as pl

from analysis._bootstrap import TaskMatrix
from analysis._errors import MixedInputError, TableSchemaError
from analysis._vocab import CANONICAL_PROFILES, DIMENSIONS, SuccessFlag
from cavbench.tables import Table, schema_for

GROUP_INDEX = "__group"
"""Name of the temporary column holding a group's position in the canonical order."""


class ColumnKind(StrEnum):
    """The column types the analysis relies on."""

    STRING = "string"
    BOOLEAN = "boolean"
    INTEGER = "integer"
    STRING_LIST = "list of strings"


def _matches(dtype: pl.DataType, kind: ColumnKind) -> bool:
    if kind is ColumnKind.STRING:
        return dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum)
    if kind is ColumnKind.BOOLEAN:
        return dtype == pl.Boolean
    if kind is ColumnKind.INTEGER:
        return dtype.is_integer()
    return isinstance(dtype, pl.List) and dtype.inner in (pl.String, pl.Categorical)


EPISODE_COLUMNS: Mapping[str, ColumnKind] = {
    "episode_id": ColumnKind.STRING,
    "scenario_id": ColumnKind.STRING,
    "family": ColumnKind.STRING,
    "profile": ColumnKind.STRING,
    "adapter": ColumnKind.STRING,
    "pack_id": ColumnKind.STRING,
    "seed": ColumnKind.INTEGER,
    "repetition": ColumnKind.INTEGER,
    "scoring_rule": ColumnKind.STRING,
    "outcome_success": ColumnKind.BOOLEAN,
    "policy_aware_outcome_success": ColumnKind.BOOLEAN,
    "commit_valid_success": ColumnKind.BOOLEAN,
    "reported_status": ColumnKind.STRING,
    "commit_count": ColumnKind.INTEGER,
    "failure_codes": ColumnKind.STRING_LIST,
    "error": ColumnKind.STRING,
}
"""The `episodes` columns of the sweep's table contract that the analysis may rely on."""

RECORD_COLUMNS: frozenset[str] = frozenset(schema_for(Table.EPISODES).names)
"""Every `episodes` column the sweep writes that is not a swept factor (the sweep's declared
table schema without factors; any other column of the files is a factor)."""

UNPOOLABLE_COLUMNS: tuple[str, ...] = (
    "adapter",
    "adapter_version",
    "pack_id",
    "pack_digest",
    "scoring_rule",
)
"""Columns whose different values must never be pooled into one rate (swept factors are
added to these by the pipelines)."""

VERDICT_COLUMNS: Mapping[str, ColumnKind] = {
    "episode_id": ColumnKind.STRING,
    "scenario_id": ColumnKind.STRING,
    "profile": ColumnKind.STRING,
    "dimension": ColumnKind.STRING,
    "status": ColumnKind.STRING,
}
"""The `verdicts` columns of the table contract."""

FLAG_COLUMNS: tuple[str, ...] = tuple(str(f) for f in SuccessFlag)


def require_columns(
    frame: pl.DataFrame,
    columns: Mapping[str, ColumnKind],
    source: str = "episodes",
) -> None:
    """Raise :class:`TableSchemaError` unless every named column exists with the right type.

    Success flags must also be free of nulls (a null flag is neither a success nor a failure).

    >>> require_columns(pl.DataFrame({"profile": ["direct"]}), {"profile": ColumnKind.STRING})
    >>> try:
    ...     require_columns(pl.DataFrame({"x": [1]}), {"profile": ColumnKind.STRING})
    ... except TableSchemaError as error:
    ...     print(error.column, "|", error.problem)
    profile | missing (the frame has ['x'])
    """
    schema = frame.schema
    for name, kind in columns.items():
        if name not in schema:
            raise TableSchemaError(
                source,
                name,
                f"missing (the frame has {sorted(schema.names())})",
                "read the sweep's tables with analysis.read_sweep or add the column",
            )
        if not _matches(schema[name], kind):
            raise TableSchemaError(
                source,
                name,
                f"has type {schema[name]}, expected {kind}",
                "write the table with the sweep's declared schema",
            )
        if kind is ColumnKind.BOOLEAN and frame[name].null_count():
            raise TableSchemaError(
                source,
                name,
                f"{frame[name].null_count()} null values",
                "every episode must record true or false; re-run collect on the sweep",
            )


def require_rows(frame: pl.DataFrame, column: str, source: str = "episodes") -> None:
    """Raise :class:`TableSchemaError` (naming ``column``) when the frame has no rows.

    >>> try:
    ...     require_rows(pl.DataFrame({"scenario_id": []}, schema={"scenario_id": pl.String}),
    ...                  "scenario_id")
    ... except TableSchemaError as error:
    ...     print(error)
    episodes: column 'scenario_id': no rows: the table is empty, so there is no task to analyse (fix: check the sweep produced episodes and that --where filters keep some)
    """
    if frame.is_empty():
        raise TableSchemaError(
            source,
            column,
            "no rows: the table is empty, so there is no task to analyse",
            "check the sweep produced episodes and that --where filters keep some",
        )


def require_group_columns(frame: pl.DataFrame, names: Sequence[str], source: str) -> None:
    """Check that grouping columns exist, hold scalars (not lists) and have no nulls.

    A null task id or group key would silently become a task or group named "null".

    >>> try:
    ...     require_group_columns(pl.DataFrame({"profile": ["direct", None]}), ["profile"], "x")
    ... except TableSchemaError as error:
    ...     print(error.column, "|", error.problem)
    profile | 1 null value(s); an episode without profile cannot be grouped or paired
    """
    for name in names:
        if name not in frame.schema:
            raise TableSchemaError(
                source,
                name,
                f"cannot group by a missing column (the frame has {sorted(frame.schema.names())})",
                "pass group keys that are columns of the table",
            )
        if isinstance(frame.schema[name], pl.List | pl.Struct):
            raise TableSchemaError(
                source, name, "cannot group by a nested column", "group by a scalar column"
            )
        nulls = frame.get_column(name).null_count()
        if nulls:
            raise TableSchemaError(
                source,
                name,
                f"{nulls} null value(s); an episode without {name} cannot be grouped or paired",
                f"fill {name!r} when writing the table, or drop those rows before analysing",
            )


def _canonical_rank(name: str, values: Sequence[object]) -> dict[object, int] | None:
    orders: dict[str, tuple[str, ...]] = {"profile": CANONICAL_PROFILES, "dimension": DIMENSIONS}
    order = orders.get(name)
    if order is None or not set(values) <= set(order):
        return None
    return {v: order.index(str(v)) for v in values}


def ordered_levels(frame: pl.DataFrame, column: str) -> list[object]:
    """Distinct values of a column: canonical order for profiles and dimensions, else sorted.

    >>> ordered_levels(pl.DataFrame({"profile": ["full_lifecycle", "direct"]}), "profile")
    ['direct', 'full_lifecycle']
    >>> ordered_levels(pl.DataFrame({"family": ["state_mutation", "execution_recovery"]}), "family")
    ['execution_recovery', 'state_mutation']
    """
    values = frame.get_column(column).unique().to_list()
    rank = _canonical_rank(column, values)
    if rank is not None:
        return sorted(values, key=lambda v: rank[v])
    non_null = sorted(v for v in values if v is not None)
    return non_null + ([None] if None in values else [])


def group_keys(frame: pl.DataFrame, group_by: Sequence[str]) -> pl.DataFrame:
    """Distinct group keys in canonical order, with their position in column ``__group``.

    >>> frame = pl.DataFrame({"profile": ["reconciled", "direct", "direct"], "x": [1, 2, 1]})
    >>> group_keys(frame, ["profile"]).rows()
    [('direct', 0), ('reconciled', 1)]
    """
    if not group_by:
        return pl.DataFrame({GROUP_INDEX: [0]}, schema={GROUP_INDEX: pl.Int64})
    keys = frame.select(list(group_by)).unique()
    rank_columns = []
    for name in group_by:
        levels = ordered_levels(frame, name)
        rank_name = f"__rank_{name}"
        rank_columns.append(rank_name)
        mapping = pl.DataFrame(
            {name: levels, rank_name: list(range(len(levels)))},
            schema={name: frame.schema[name], rank_name: pl.Int64},
        )
        keys = keys.join(mapping, on=name, how="left", nulls_equal=True)
    keys = keys.sort(rank_columns).drop(rank_columns)
    return (
        keys.with_row_index(GROUP_INDEX)
        .with_columns(pl.col(GROUP_INDEX).cast(pl.Int64))
        .select(*group_by, GROUP_INDEX)
    )


def sort_by_groups(frame: pl.DataFrame, group_by: Sequence[str], *extra: str) -> pl.DataFrame:
    """Sort a result frame by its group keys in canonical order, then by ``extra`` columns."""
    if not group_by:
        return frame.sort(list(extra)) if extra else frame
    keys = group_keys(frame, group_by)
    joined = frame.join(keys, on=list(group_by), how="left", nulls_equal=True)
    return joined.sort([GROUP_INDEX, *extra], maintain_order=True).drop(GROUP_INDEX)


def check_single_valued(
    frame: pl.DataFrame,
    columns: Sequence[str],
    group_by: Sequence[str],
    source: str = "episodes",
) -> None:
    """Raise :class:`MixedInputError` if a column varies within a group it is not part of.

    Used for columns that must never be pooled into one rate: the scoring rule, the pack, the
    adapter and any swept factor. Seeds and repetitions are meant to be pooled and are not
    checked.
    """
    present = [c for c in columns if c in frame.schema and c not in group_by]
    if not present:
        return
    grouped = frame.group_by(list(group_by) or pl.lit(0)).agg(
        [pl.col(c).n_unique().alias(c) for c in present]
    )
    for column in present:
        if grouped.get_column(column).max() not in (None, 0, 1):
            values = frame.get_column(column).unique().sort(nulls_last=True).to_list()
            raise MixedInputError(
                f"{source}: column {column!r} takes several values {values[:6]} within one "
                f"group of {list(group_by)}; rates would pool them (fix: add {column!r} to the "
                f"group keys, e.g. --group-by {','.join([*group_by, column])}, or filter to one "
                f"value with --where {column}=VALUE)"
            )


@dataclass(frozen=True, eq=False)
class GroupedTasks:
    """A task matrix with one block of columns per group: ``n`` and each success flag count.

    Column ``f"{g}:{quantity}"`` holds, per task, the quantity summed over the episodes of group
    ``g`` (its position in :attr:`keys`); a task a group did not run has zeros there.
    """

    matrix: TaskMatrix
    group_by: tuple[str, ...]
    keys: pl.DataFrame
    """Group key columns plus ``__group`` (the group's position), in canonical order."""

    @property
    def n_groups(self) -> int:
        """Number of groups."""
        return self.keys.height

    @staticmethod
    def column(group: int, quantity: str) -> str:
        """Name of a group's column in the task matrix."""
        return f"{group}:{quantity}"

    def values(self, group: int, quantity: str) -> np.ndarray:
        """Per-task values of one group's quantity."""
        return self.matrix.values[:, self.matrix.index(self.column(group, quantity))]


def grouped_tasks(
    episodes: pl.DataFrame,
    group_by: Sequence[str] = ("profile",),
    *,
    task: str = "scenario_id",
    strata: str | None = None,
    quantities: Sequence[str] = FLAG_COLUMNS,
) -> GroupedTasks:
    """Sum ``n`` (episodes) and each quantity per task and group into a :class:`GroupedTasks`.

    Tasks are sorted by id so the resampling draws do not depend on row order. ``strata``
    names a task-level column (such as ``family``) for a stratified bootstrap.

    >>> frame = pl.DataFrame({
    ...     "scenario_id": ["a", "a", "b"], "profile": ["direct", "direct", "direct"],
    ...     "outcome_success": [True, False, True],
    ... })
    >>> gt = grouped_tasks(frame, quantities=["outcome_success"])
    >>> gt.matrix.columns, gt.matrix.values.tolist()
    (('0:n', '0:outcome_success'), [[2.0, 1.0], [1.0, 1.0]])
    """
    group_by = tuple(group_by)
    require_group_columns(episodes, [task, *group_by], "episodes")
    require_rows(episodes, task)
    for q in quantities:
        if q not in episodes.schema:
            raise TableSchemaError(
                "episodes", q, "missing", "read the sweep's tables with analysis.read_sweep"
            )
    keys = group_keys(episodes, group_by)
    tasks = sorted(episodes.get_column(task).unique().to_list())
    task_index = pl.DataFrame(
        {task: tasks, "__task": list(range(len(tasks)))},
        schema={task: episodes.schema[task], "__task": pl.Int64},
    )
    summed = (
        episodes.group_by([task, *group_by])
        .agg(pl.len().alias("n"), *[pl.col(q).cast(pl.Float64).sum().alias(q) for q in quantities])
        .join(
            keys, on=list(group_by) or None, how="left" if group_by else "cross", nulls_equal=True
        )
        .join(task_index, on=task, how="left")
    )
    per_group = ("n", *quantities)
    width = len(per_group)
    values = np.zeros((len(tasks), keys.height * width), dtype=np.float64)
    rows = summed.get_column("__task").to_numpy()
    base = summed.get_column(GROUP_INDEX).to_numpy() * width
    for offset, q in enumerate(per_group):
        values[rows, base + offset] = summed.get_column(q).cast(pl.Float64).to_numpy()
    columns = tuple(GroupedTasks.column(g, q) for g in range(keys.height) for q in per_group)
    strata_labels: tuple[str, ...] | None = None
    if strata is not None:
        require_group_columns(episodes, [strata], "episodes")
        per_task = episodes.group_by(task).agg(pl.col(strata).unique())
        bad = per_task.filter(pl.col(strata).list.len() > 1)
        if bad.height:
            raise MixedInputError(
                f"episodes: task {bad.get_column(task)[0]!r} has several {strata!r} values; "
                f"a stratum must be a property of the task (fix: stratify by a task-level column)"
            )
        lookup = dict(
            zip(
                per_task.get_column(task).to_list(),
                per_task.get_column(strata).list.first().cast(pl.String).to_list(),
                strict=True,
            )
        )
        strata_labels = tuple(str(lookup[t]) for t in tasks)
    matrix = TaskMatrix(tuple(str(t) for t in tasks), columns, values, strata_labels)
    return GroupedTasks(matrix=matrix, group_by=group_by, keys=keys)
