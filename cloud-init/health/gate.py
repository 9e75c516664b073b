"""The node's health gate: every check family in turn, light by default (about a minute on an 8-GPU node) or deep on
request, each family's failure to even run reported as a failed row rather than a crash.

Order: memory and driver errors first (read-only), then one load phase in which every GPU runs matmuls and
nvidia-smi samples PCIe links and clock reasons under that load, then HBM, GPU-to-GPU copies on NVLink hosts, the
intra-node all-reduce with NCCL's network choice, and DCGM's diagnostics where dcgmi exists.
"""

from __future__ import annotations

import socket
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from health import allreduce, clocks, dcgm, errors, matmul, memory, pcie, tools
from health.config import HealthConfig
from health.result import Check, Report, failed, judge, skipped, timed_report
from health.thresholds import Limits


@dataclass(frozen=True)
class Effort:
    """How long and how large each check runs."""

    matmul_n: int
    matmul_s: float
    hbm_mib: int
    hbm_s: float
    p2p_mib: int
    p2p_copies: int
    p2p_both_directions: bool
    allreduce_mib: tuple[int, ...]
    allreduce_iters: int
    dcgm_level: int


EFFORT = {
    "light": Effort(8192, 2.0, 1024, 1.0, 256, 10, False, (256, 1024), 10, 1),
    # Long enough for the clock to settle at the power limit, every pair both ways, the baseline's size sweep.
    "deep": Effort(8192, 15.0, 4096, 5.0, 1024, 20, True, (64, 128, 256, 512, 1024), 20, 2),
}
CPU_EFFORT = Effort(256, 0.2, 16, 0.1, 16, 3, False, (1,), 2, 1)
"""CPU stand-ins for GPUs (tests, and a look at what the gate does on a machine without GPUs)."""


@dataclass(frozen=True)
class GateConfig:
    """What one gate run checks: what the plan holds the node to (node.json), the level and DCGM level (the
    config's unless the command line says otherwise) and the devices."""

    node: HealthConfig
    level: str = "light"
    dcgm_level: int | None = None
    devices: tuple[torch.device, ...] = ()
    stand_in: bool = False
    """The devices stand in for the node's GPUs on a machine that has none (the boot harness,
    here/boot/gpu.py): every check runs and reports its figure, and the GPU count is judged, but the GPU
    thresholds are not applied, since a CPU is not the GPU they describe."""

    @property
    def gpus(self) -> bool:
        """Real GPUs, not CPU stand-ins: their figures are compared with each other."""
        return bool(self.devices) and self.devices[0].type == "cuda"

    @property
    def effort(self) -> Effort:
        return EFFORT[self.level] if self.gpus else CPU_EFFORT


def _guarded(family: str, run: Callable[[], list[Check]]) -> list[Check]:
    """A family that raises (a CUDA error on a broken GPU, a tool that crashed) is one failed row, not a crash."""
    try:
        return run()
    except Exception as error:  # every failure of a check is a finding about the node
        where = traceback.extract_tb(error.__traceback__)[-1]
        return [failed(family, "node", f"{type(error).__name__}: {error} ({Path(where.filename).name}:{where.lineno})")]


def _smi_wanted(config: GateConfig) -> bool:
    """nvidia-smi's checks run on GPU nodes (where its absence is a finding) and wherever it is installed."""
    return config.gpus or tools.available("nvidia-smi")


def _error_state() -> list[Check]:
    gpus = tools.query_gpus(errors.FIELDS)
    try:
        remaps = tools.rows(tools.run("nvidia-smi", f"--query-remapped-rows={','.join(errors.REMAP_FIELDS)}",
                                      "--format=csv,noheader,nounits"), errors.REMAP_FIELDS)
    except tools.ToolError:
        remaps = None  # before Ampere: no row remapping to query
    try:
        kernel_log = tools.run("dmesg", timeout_s=30)
    except tools.ToolError:
        kernel_log = None
    return errors.checks(gpus, remaps, kernel_log)


def _load_phase(config: GateConfig, lim: Limits) -> list[Check]:
    """Matmuls on every device at once; PCIe links and clock reasons sampled while they run."""
    effort, sampled, problems = config.effort, [], []
    fields = tuple(dict.fromkeys(pcie.FIELDS + clocks.FIELDS))

    def sample() -> None:
        try:
            sampled.extend(tools.query_gpus(fields))
        except tools.ToolError as error:
            problems.append(str(error))

    figures = matmul.measure(config.devices, effort.matmul_n, effort.matmul_s,
                             during=sample if _smi_wanted(config) else None)
    found = matmul.checks(figures, lim.matmul_tflops, effort.matmul_n, peers=config.gpus)
    if problems:
        found += [failed("pcie", "node", problems[0]), failed("clocks", "node", problems[0])]
    elif sampled:
        found += pcie.checks(sampled) + clocks.checks(sampled)
    return found


def _hbm(config: GateConfig, lim: Limits) -> list[Check]:
    effort = config.effort
    figures = memory.hbm(config.devices, effort.hbm_mib << 20, effort.hbm_s)
    return memory.checks("hbm", figures, lim.hbm_gbs, f"copy of {effort.hbm_mib} MiB, read + write", config.gpus)


def _p2p(config: GateConfig, lim: Limits) -> list[Check]:
    nvswitch = config.node.nvswitch
    if not nvswitch or len(config.devices) < 2:
        return [skipped("p2p", "node", "no NVLink/NVSwitch on this instance type" if not nvswitch else "one GPU")]
    effort = config.effort
    figures = memory.p2p(config.devices, effort.p2p_mib << 20, effort.p2p_copies, effort.p2p_both_directions)
    return memory.checks("p2p", figures, lim.p2p_gbs, f"copy of {effort.p2p_mib} MiB from one GPU to another",
                         config.gpus)


def _allreduce(config: GateConfig, lim: Limits) -> list[Check]:
    if len(config.devices) < 2:
        return [skipped("allreduce", "node", "one device: nothing to reduce across")]
    effort = config.effort
    return allreduce.run(len(config.devices), lim.allreduce_busbw_gbs, effort.allreduce_mib, effort.allreduce_iters,
                         config.node.fabric, backend="nccl" if config.gpus else "gloo")


def run(config: GateConfig) -> Report:
    """Every check family for this node; the report's ``ok`` is every row passing."""
    started, lim = time.time(), config.node.limits
    if config.stand_in:
        lim = replace(lim, matmul_tflops=None, hbm_gbs=None, p2p_gbs=None, allreduce_busbw_gbs=None,
                      cross_node_busbw_gbs=None)
    checks: list[Check] = []
    if config.node.gpus:
        checks.append(judge("gpus", "node", float(len(config.devices)), "GPUs", float(config.node.gpus), ">=",
                            "devices the gate could use (CUDA's count on a GPU node)"))
    if not config.devices:
        checks.append(skipped("gpu-checks", "node", "no devices to check (the instance type promises no GPUs)"))
        return timed_report("gate", socket.gethostname(), config.level, started, checks)
    families = [("errors", _error_state)] if _smi_wanted(config) else []
    families += [("matmul", lambda: _load_phase(config, lim)), ("hbm", lambda: _hbm(config, lim)),
                 ("p2p", lambda: _p2p(config, lim)), ("allreduce", lambda: _allreduce(config, lim)),
                 ("dcgm", lambda: dcgm.checks(config.dcgm_level or config.effort.dcgm_level))]
    timings = {}
    for family, check in families:
        begin = time.perf_counter()
        checks += _guarded(family, check)
        timings[family] = round(time.perf_counter() - begin, 3)
    report = timed_report("gate", socket.gethostname(), config.level, started, checks)
    report.timings = timings
    return report
