"""torch.cuda of the stand-in: one GPU, and the NCCL version the wheel carries (GPUFLEET_TEST_TORCH_NCCL)."""

import os
from types import SimpleNamespace

nccl = SimpleNamespace(version=lambda: tuple(int(p) for p in os.environ["GPUFLEET_TEST_TORCH_NCCL"].split(".")))


def is_available() -> bool:
    return True


def synchronize() -> None:
    """Nothing runs: the stand-in's collectives are done when called."""
