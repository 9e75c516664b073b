"""The software matrix per image: the driver, CUDA, torch wheel, NCCL and fabric stack one node runs, decided once.

One policy for every image (docs/cloud-facts.md#software-matrix): the job's torch is PyPI's Linux wheel, which pins
CUDA 13 (`cuda-toolkit==13.0.*`) and its own NCCL (`nvidia-nccl-cu13`), so the driver must be of a branch NVIDIA's
table allows for CUDA 13 (>= 580). Plain images install the pinned driver exactly (and fabric manager of the same
version on NVSwitch hosts); deep-learning images bring their own driver and are checked against the minimum branch,
not the pin, since their releases move (the AWS DLAMI ships 580.x / 595.x).
"""

from __future__ import annotations

from plan.catalog import InstanceType
from plan.model import ImagePlan
from plan.node import SoftwarePlan

# NVIDIA's CUDA compatibility table (docs/cloud-facts.md#cuda-driver-table): CUDA major -> lowest driver branch.
CUDA_MIN_DRIVER_BRANCH = {13: 580, 12: 525, 11: 450}
# PyPI's torch 2.13.0 Linux x86_64 wheel: Requires-Dist cuda-toolkit==13.0.3, nvidia-nccl-cu13==2.29.7.
TORCH = "torch==2.13.0"
TORCH_INDEX = "https://pypi.org/simple"
TORCH_CUDA = "13.0"
TORCH_NCCL = "2.29.7"
# The R580 driver plain images install, and fabric manager of exactly it (docs/cloud-facts.md#cuda-driver-table).
DRIVER_VERSION = "580.95.05"
# The fabric's own driver stack and the NCCL network it must use (docs/cloud-facts.md#nccl-net): NCCL fails at
# init rather than fall back to sockets when NCCL_NET names a network it cannot load.
FABRIC_STACK = {
    "efa": ("aws-efa-installer (libfabric, aws-ofi-nccl >= 1.13)", "OFI"),
    "erdma": ("erdma driver (Alibaba eRDMA, rdma-core verbs)", "IB"),
    "rdma": ("Mellanox OFED (rdma-core verbs)", "IB"),
    "tcp": ("", "Socket"),
}
# Gate failures no replacement fixes: every node of the group boots the same image and the same matrix. fabric-stack:
# the fabric's software is neither on the image nor installable the cloud's documented way (gpufleet-fabric); image:
# a baked image whose recorded matrix is not the plan's (health/image.py).
PERMANENT_FAILURES = ("driver", "torch-cuda", "fabricmanager", "nccl-net", "fabric-stack", "image")
# How many nodes of one group may fail for the same permanent reason and be replaced before the rest stop asking.
FAILURE_BUDGET = 2


def failure_records(checkpoint_uri: str) -> str:
    """Where the group's nodes record permanent gate failures: beside the checkpoints, in the cluster's bucket."""
    return checkpoint_uri.rsplit("/", 1)[0] + "/failures"


def cuda_major(cuda: str) -> int:
    return int(cuda.split(".")[0])


def plan_software(image: ImagePlan, row: InstanceType, fabric: str) -> SoftwarePlan:
    """The matrix for this image, instance type and fabric: a baked image holds the matrix its base would install."""
    stack, net = FABRIC_STACK[fabric]
    return SoftwarePlan(
        mode="baked" if image.baked else "check" if image.has_drivers else "install",
        driver="" if image.has_drivers else DRIVER_VERSION,
        driver_min_branch=CUDA_MIN_DRIVER_BRANCH[cuda_major(TORCH_CUDA)],
        cuda=TORCH_CUDA, torch=TORCH, torch_index=TORCH_INDEX, nccl=TORCH_NCCL,
        fabricmanager="= driver" if row.nvswitch else "", fabric_stack=stack, nccl_net=net)
