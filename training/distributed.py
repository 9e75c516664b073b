"""Process-group setup and placement of this rank on its GPU and NUMA node.

Works unchanged under plain ``python`` (one process, no process group),
``torchrun --standalone`` and elastic torchrun: everything comes from the
RANK / WORLD_SIZE / LOCAL_RANK variables torchrun sets.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

from training import preflight
from training.config import ConfigError


@dataclass
class Dist:
    rank: int
    local_rank: int
    node_rank: int
    """torchrun's GROUP_RANK: ranks with the same value share a node, and so its local checkpoint directory."""
    world_size: int
    device: torch.device
    control_group: dist.ProcessGroup | None
    """A gloo group for small host-side agreements (stop flags), so they never wait on the GPU stream."""

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def is_node_main(self) -> bool:
        """The first rank of its node: the one that reads and writes the node's checkpoints."""
        return self.local_rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    def any_true(self, *flags: bool) -> list[bool]:
        """For each flag, True on every rank if it is true on any rank (one all-reduce MAX on the CPU)."""
        return [bool(value) for value in self._reduce([int(flag) for flag in flags], dist.ReduceOp.MAX)]

    def smallest(self, value: int) -> int:
        """The smallest of every rank's ``value``."""
        return self._reduce([value], dist.ReduceOp.MIN)[0]

    def _reduce(self, values: list[int], op) -> list[int]:
        if not self.enabled:
            return values
        tensor = torch.tensor(values, dtype=torch.int64)
        dist.all_reduce(tensor, op=op, group=self.control_group)
        return tensor.tolist()

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier(group=self.control_group)

    def broadcast_object(self, obj, src: int = 0):
        """Rank ``src``'s ``obj`` on every rank (pickled, over the gloo control group)."""
        if not self.enabled:
            return obj
        box = [obj]
        dist.broadcast_object_list(box, src=src, group=self.control_group)
        return box[0]

    def all_gather_object(self, obj) -> list:
        """Every rank's ``obj``, indexed by rank (pickled, over the gloo control group)."""
        if not self.enabled:
            return [obj]
        gathered = [None] * self.world_size
        dist.all_gather_object(gathered, obj, group=self.control_group)
        return gathered

    def close(self) -> None:
        if dist.is_initialized():
            dist.destroy_process_group()


def _numa_cpus(device_index: int) -> set[int] | None:
    """CPUs of the NUMA node the GPU hangs off, read from sysfs; None where that is unknown."""
    props = torch.cuda.get_device_properties(device_index)
    try:
        bus_id = f"{props.pci_domain_id:04x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"
        node = int(Path(f"/sys/bus/pci/devices/{bus_id}/numa_node").read_text())
        cpulist = Path(f"/sys/devices/system/node/node{node}/cpulist").read_text().strip()
    except (AttributeError, OSError, ValueError):
        return None
    if node < 0:
        return None
    cpus: set[int] = set()
    for part in cpulist.split(","):
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


def pin_to_gpu_numa_node(device_index: int) -> set[int] | None:
    """Restrict this process to its GPU's NUMA node, so host copies and the data path stay local."""
    cpus = _numa_cpus(device_index)
    if not cpus:
        return None
    allowed = cpus & os.sched_getaffinity(0)
    if allowed:
        os.sched_setaffinity(0, allowed)
    return allowed or None


def _shared_store() -> dist.Store | None:
    """Under torchrun with the agent's shared store (torch's default; gpufleet-train turns it off), every rendezvous
    round of this agent reuses one store that still holds the previous round's gloo addresses: give each restart its
    own key prefix. That is enough for one agent (--standalone); across nodes the agents' restart counts differ and a
    node joining later never learns the store's address, hence gpufleet-train's setting. None otherwise (then
    _job_store builds the store)."""
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True":
        return None
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False)
    return dist.PrefixStore(f"gpufleet/attempt_{os.environ['TORCHELASTIC_RESTART_COUNT']}", store)


def _job_store(rank: int, world_size: int) -> dist.Store:
    """What env:// would build: rank 0 hosts a fresh TCPStore at the MASTER_ADDR:MASTER_PORT its agent published for
    this rendezvous round, so no round sees an earlier round's keys, whichever nodes joined when. Built here so the
    preflight can use it before the process group forms. Its timeout is the preflight's JOIN_WAIT_S (torch's is 300
    s): a rank 0 that left after the round formed, or a rank that never connects to it, fails the round by name."""
    address, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    try:
        return dist.TCPStore(address, port, world_size, is_master=rank == 0,
                             timeout=timedelta(seconds=preflight.JOIN_WAIT_S))
    except dist.DistError as error:
        what = (f"rank 0's store at {address}:{port} did not answer" if rank else
                f"not all {world_size} ranks reached this rank's store at {address}:{port}")
        raise preflight.MissingPeers(
            f"gpufleet preflight: {what} within {preflight.JOIN_WAIT_S:.0f} s (a node left after the rendezvous round "
            "formed: named by the cluster acceptance, or lost); this round fails so the nodes left re-form the job "
            f"({str(error).splitlines()[0]})") from None


def setup(device_choice: str = "auto") -> Dist:
    """Initialise the process group (NCCL on GPUs, gloo on CPU) and select this rank's device, after checking that
    the nodes reach each other (``training.preflight``: raises UnreachablePeers naming the node and port)."""
    rank = int(os.environ.get("RANK", 0))
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    node_rank = int(os.environ.get("GROUP_RANK", 0))
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    use_cuda = torch.cuda.is_available() if device_choice == "auto" else device_choice == "cuda"
    if use_cuda and not torch.cuda.is_available():
        raise ConfigError(
            "Setting 'device' is 'cuda' but this machine has no usable CUDA device; set it to 'auto' or 'cpu'."
        )
    if use_cuda and local_rank >= torch.cuda.device_count():
        raise ConfigError(
            f"Local rank {local_rank} has no GPU of its own: this machine has {torch.cuda.device_count()}. Start at "
            "most that many processes per node (torchrun --nproc-per-node)."
        )
    if use_cuda:
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        pin_to_gpu_numa_node(local_rank)
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    else:
        device = torch.device("cpu")
    control = None
    if world_size > 1:
        backend = "nccl" if use_cuda else "gloo"
        store = _shared_store() or _job_store(rank, world_size)
        nodes = world_size // int(os.environ.get("LOCAL_WORLD_SIZE", world_size))
        preflight.check_node_mesh(store, node_rank, nodes, local_rank == 0, os.environ["MASTER_ADDR"], world_size)
        dist.init_process_group(
            backend=backend, device_id=device if use_cuda else None, store=store, rank=rank, world_size=world_size
        )
        control = dist.new_group(backend="gloo") if use_cuda else dist.group.WORLD
    return Dist(
        rank=rank,
        local_rank=local_rank,
        node_rank=node_rank,
        world_size=world_size,
        device=device,
        control_group=control,
    )
