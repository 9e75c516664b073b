"""`python -m health.run_job ARGS`: a gpufleet node's training command, the job (`training.train`, with the same
ARGS) whose world is formed through the cluster acceptance (`health.job.accepted_world`): the gate wraps the job,
and the job imports nothing of the node's.

gpufleet-train runs it under torchrun from the code bundle's root, with cloud-init/ on PYTHONPATH and GF_HEALTH_CONFIG
naming the plan's health.json; exit codes are the job's.
"""

from __future__ import annotations

import sys

from health.job import accepted_world
from training import train
from training.config import TrainConfig
from training.distributed import Dist, setup


def accepted(cfg: TrainConfig) -> Dist:
    """The job's world once the cluster acceptance passed it, at the job's own DDP bucket size."""
    return accepted_world(setup, cfg.device, cfg.bucket_cap_mb)


def main(argv: list[str] | None = None) -> int:
    return train.main(argv, form_world=accepted)


if __name__ == "__main__":
    sys.exit(main())
