"""`python -m cavbench.sweep [OVERRIDES] [-m]`: run a study as a Hydra sweep.

One Hydra job = one cell (profile × adapter × scenario subset × scoring rule × seed block ×
any swept factor). Each job writes its tables and `manifest.json` into the cell's folder,
`<output.root>/<output.name>/profile=…/adapter=…/…`. Running the same command again skips
complete cells and redoes the rest. Config tree: `conf/` in a checkout, `cavbench/conf` in
an installed wheel; see `docs/configuration.md`.

    python -m cavbench.sweep -m experiment=ablation
    python -m cavbench.sweep -m profile=glob(*) seeds.count=5 hydra/launcher=joblib
"""

from __future__ import annotations

import hydra

from cavbench.study import config_dir, task


def main() -> None:
    """Parse Hydra's command line and run the job(s)."""
    hydra.main(version_base="1.3", config_path=str(config_dir()), config_name="config")(task)()


if __name__ == "__main__":
    main()
