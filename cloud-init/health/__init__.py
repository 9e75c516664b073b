"""gpufleet's health checks: the node gate (`python -m health`) and the cluster acceptance test
(`torchrun ... -m health.acceptance`), run from the code bundle with cloud-init/ on PYTHONPATH. README.md beside this
file has the interface (files, metrics, exit codes), the thresholds and how the acceptance finds a slow node."""
