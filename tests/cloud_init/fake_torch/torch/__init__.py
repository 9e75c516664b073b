"""A stand-in for the job's CUDA torch on a GPU node, for gpufleet-nccl's tests (test_software_node_scripts.py): only
what health.ncclprobe calls, with the NCCL underneath emulated by nccl_emulation on the node GPUFLEET_TEST_NODE
describes (nccl_emulation.Node's fields as JSON) under the process's environment."""

from torch import cuda, distributed  # noqa: F401 - torch's own submodules, imported with it


def device(kind: str, index: int) -> str:
    return f"{kind}:{index}"


def ones(count: int, device: str | None = None) -> list[float]:
    return [1.0] * count
