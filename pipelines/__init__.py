"""Stages wired end to end: sweep tables to metrics, report tables and figures.

- :mod:`pipelines.analyze` — `cavbench analyze SWEEP_DIR --out DIR`;
- :mod:`pipelines.paper` — `python -m pipelines.paper` / `cavbench figures`: the paper's
  figures and tables recomputed offline from the frozen artifacts under `artifacts/`;
- :mod:`pipelines.cli` — registers those subcommands with the `cavbench` command line.
"""
