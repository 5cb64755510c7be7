"""A Python candidate process: a baseline profile over the REST gateway (argv[1] = profile)."""

import os
import sys

from cavbench.adapters import baseline
from cavbench.gateway.client import HttpChannel, run_remote

if __name__ == "__main__":
    channel = HttpChannel(os.environ["CAVBENCH_GATEWAY_URL"], os.environ["CAVBENCH_RUN_TOKEN"])
    run_remote(baseline(sys.argv[1]), channel)
