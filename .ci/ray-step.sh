#!/usr/bin/env bash
# The Ray step of CI: install the [ray] extra and run the slow sweep tests (two jobs on a
# local Ray cluster on 127.0.0.1, a joblib multirun, a sweep killed with SIGKILL and resumed,
# the headline ablation end to end). Fails if Ray leaves anything in ~/.ray.
set -euo pipefail
cd "$(dirname "$0")/.."

python -m pip install --quiet -e '.[ray]'
export RAY_USAGE_STATS_ENABLED=0

ray_home="${HOME}/.ray"
before="$(ls -A "$ray_home" 2>/dev/null || true)"
python -m pytest -m slow tests/sweep tests/tables
after="$(ls -A "$ray_home" 2>/dev/null || true)"
if [ "$before" != "$after" ]; then
  echo "the Ray step left files in $ray_home:" >&2
  ls -la "$ray_home" >&2
  exit 1
fi
