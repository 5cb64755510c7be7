"""Statistics and figures over cavbench's Parquet tables.

Pure, typed functions over polars frames (file reading sits in :func:`read_sweep` only):
headline metrics with task-clustered bootstrap intervals and small-n intervals, paired
contrasts between profiles, pass^k, failure-code and dimension breakdowns, an interval
calibration simulation, deterministic figures and report tables. See `docs/statistics.md`.

This package reads tables only; an import contract keeps it away from the runtime, the
adapters, the evaluator and the scenario models.
"""

from analysis._bootstrap import (
    BootstrapConfig,
    BootstrapResult,
    NamedStatistic,
    Ratio,
    RatioDifference,
    TaskMatrix,
    clustered_bootstrap,
    resample_totals,
    resample_weights,
)
from analysis._breakdowns import dimension_breakdown, failure_code_breakdown
from analysis._calibration import (
    CalibrationMethod,
    CalibrationResult,
    CalibrationSetup,
    CoverageEstimate,
    run_calibration,
)
from analysis._contrasts import (
    ContrastsResult,
    holm_adjust,
    mcnemar_exact,
    paired_contrasts,
    paired_permutation_p,
)
from analysis._errors import (
    AnalysisConfigError,
    AnalysisError,
    MixedInputError,
    SweepNotFoundError,
    TableSchemaError,
)
from analysis._factors import (
    HEADLINE_MEASURES,
    NO_DETECTED_DIFFERENCE,
    RELIABILITY_MEASURES,
    FactorEffects,
    Measure,
    MeasureKind,
    factor_column,
    factor_effects,
    factor_effects_table,
    factor_forest_figure,
)
from analysis._figures import (
    FigureFormat,
    Plot,
    family_small_multiples,
    figure_style,
    osr_cvsr_dumbbell,
    paired_difference_figure,
    pass_k_figure,
    validity_gap_figure,
    write_plot,
)
from analysis._frames import (
    EPISODE_COLUMNS,
    VERDICT_COLUMNS,
    GroupedTasks,
    check_single_valued,
    grouped_tasks,
    ordered_levels,
)
from analysis._intervals import Interval, binomial_interval, jeffreys_interval, wilson_interval
from analysis._io import Layout, SweepTables, TableSource, read_sweep, sha256_file
from analysis._metrics import MetricsResult, effective_n, headline_metrics, rate_counts
from analysis._passk import pass_hat_k, pass_hat_k_per_task
from analysis._report import ReportTable, contrasts_table, headline_table, to_latex, to_markdown
from analysis._synthetic import (
    GOLDEN_ABLATION_COUNTS,
    SyntheticTables,
    ablation_standin,
    simulate_episodes,
)
from analysis._usage import rated_episodes, usage_summary
from analysis._vocab import (
    CANONICAL_PROFILES,
    DIMENSIONS,
    IntervalMethod,
    Metric,
    SmallNMethod,
    SuccessFlag,
    VerdictStatus,
)

__all__ = [
    "CANONICAL_PROFILES",
    "DIMENSIONS",
    "EPISODE_COLUMNS",
    "GOLDEN_ABLATION_COUNTS",
    "HEADLINE_MEASURES",
    "NO_DETECTED_DIFFERENCE",
    "RELIABILITY_MEASURES",
    "VERDICT_COLUMNS",
    "AnalysisConfigError",
    "AnalysisError",
    "BootstrapConfig",
    "BootstrapResult",
    "CalibrationMethod",
    "CalibrationResult",
    "CalibrationSetup",
    "ContrastsResult",
    "CoverageEstimate",
    "FactorEffects",
    "FigureFormat",
    "GroupedTasks",
    "Interval",
    "IntervalMethod",
    "Layout",
    "Measure",
    "MeasureKind",
    "Metric",
    "MetricsResult",
    "MixedInputError",
    "NamedStatistic",
    "Plot",
    "Ratio",
    "RatioDifference",
    "ReportTable",
    "SmallNMethod",
    "SuccessFlag",
    "SweepNotFoundError",
    "SweepTables",
    "SyntheticTables",
    "TableSchemaError",
    "TableSource",
    "TaskMatrix",
    "VerdictStatus",
    "ablation_standin",
    "binomial_interval",
    "check_single_valued",
    "clustered_bootstrap",
    "contrasts_table",
    "dimension_breakdown",
    "effective_n",
    "factor_column",
    "factor_effects",
    "factor_effects_table",
    "factor_forest_figure",
    "failure_code_breakdown",
    "family_small_multiples",
    "figure_style",
    "grouped_tasks",
    "headline_metrics",
    "headline_table",
    "holm_adjust",
    "jeffreys_interval",
    "mcnemar_exact",
    "ordered_levels",
    "osr_cvsr_dumbbell",
    "paired_contrasts",
    "paired_difference_figure",
    "paired_permutation_p",
    "pass_hat_k",
    "pass_hat_k_per_task",
    "pass_k_figure",
    "rate_counts",
    "read_sweep",
    "resample_totals",
    "resample_weights",
    "run_calibration",
    "sha256_file",
    "simulate_episodes",
    "to_latex",
    "to_markdown",
    "validity_gap_figure",
    "wilson_interval",
    "write_plot",
    "rated_episodes",
    "usage_summary",
]
