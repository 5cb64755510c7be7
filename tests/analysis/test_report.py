"""Report tables: Markdown and LaTeX from one model, with k/n and both intervals."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from analysis import (
    BootstrapConfig,
    SyntheticTables,
    contrasts_table,
    headline_metrics,
    headline_table,
    paired_contrasts,
    to_latex,
    to_markdown,
)
from analysis._report import fmt_interval, fmt_p, fmt_rate, to_html

FAST = BootstrapConfig(n_resamples=1_000, seed=0)


def _headline(ablation: SyntheticTables) -> tuple[str, str]:
    table = headline_table(headline_metrics(ablation.episodes, config=FAST).frame, FAST)
    return to_markdown(table), to_latex(table)


def test_markdown_headline_has_counts_and_both_intervals(ablation: SyntheticTables) -> None:
    markdown, _ = _headline(ablation)
    lines = markdown.splitlines()
    direct = next(line for line in lines if line.startswith("| direct"))
    assert "0.925 (37/40)" in direct
    assert "0.675 (27/40)" in direct
    assert "| 95% clustered" in markdown
    assert "| 95% Wilson" in markdown
    assert "[0.912, 1.000]" in markdown  # Wilson for 40/40
    widths = {len(line) for line in lines if line.startswith("|")}
    assert len(widths) == 1  # padded into aligned columns
    assert "1,000 resamples, seed 0" in markdown


def test_latex_headline_is_booktabs_and_escaped(ablation: SyntheticTables) -> None:
    _, latex = _headline(ablation)
    for rule in (r"\toprule", r"\midrule", r"\bottomrule", r"\addlinespace"):
        assert rule in latex
    assert r"policy\_gated" in latex
    assert "policy_gated" not in latex
    assert r"95\% Wilson" in latex
    assert "\\caption{" in latex
    assert "\\label{tab:cavbench-headline}" in latex
    # One header row and three rows per profile, seven columns each.
    assert latex.count("estimate (k/n) &") == 5
    assert latex.count(r"95\% clustered &") == 5


def test_contrasts_table_carries_the_multiplicity_note(ablation: SyntheticTables) -> None:
    result = paired_contrasts(ablation.episodes, config=FAST)
    markdown = to_markdown(contrasts_table(result.frame, result.note, FAST))
    assert "full_lifecycle - direct" in markdown
    assert "30/0" in markdown
    assert "not corrected for multiplicity" in markdown


def test_html_is_deterministic_and_holds_the_same_numbers(ablation: SyntheticTables) -> None:
    table = headline_table(headline_metrics(ablation.episodes, config=FAST).frame, FAST)
    html = to_html(table)
    assert html == to_html(table)
    assert "0.925 (37/40)" in html
    assert 'id="tab-cavbench-headline"' in html


@given(st.floats(0, 1, allow_nan=False))
def test_p_values_never_print_as_zero(value: float) -> None:
    text = fmt_p(value)
    assert text == "<0.001" or float(text) > 0


@given(st.floats(-1, 1, allow_nan=False))
def test_rates_never_print_negative_zero(value: float) -> None:
    assert fmt_rate(value) != "-0.000"
    assert fmt_interval(value, value).startswith("[")
