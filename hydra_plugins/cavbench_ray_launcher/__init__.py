"""cavbench's Hydra launcher for Ray 2.x (`hydra/launcher=ray`, registered as `cavbench_ray`).

The published `hydra-ray-launcher` 1.2.2 does run on Ray 2.x and Python 3.11, but it pins
`cloudpickle<3`, which conflicts with the `joblib>=1.6` the joblib launcher needs, and pulls in
boto3 for its AWS launcher. This plugin is the small part cavbench needs: start (or attach
to) a Ray cluster, run each Hydra job as one Ray task through Hydra's `run_job`, return the
`JobReturn`s. Ray is imported only when a sweep is launched, so the plugin costs nothing
when Ray is not installed.
"""
