"""Which network NCCL chose, read from its own log (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,NET), judged against the
name the plan expects NCCL to log under the NCCL_NET it exports (node.json's health.nccl_network): an EFA node whose
NCCL fell back to sockets passes every other check and runs the job at a tenth of the speed. The node gate's
all-reduce and the NCCL probe (health.ncclprobe, gpufleet-nccl) both judge with this module.

The lines (NVIDIA/nccl src/init.cc, src/plugin/net/net_v*.cc, src/transport/net_ib/init.cc, net_socket.cc;
aws/aws-ofi-nccl include/nccl_ofi_log.h, src/nccl_ofi_net.cpp; docs/cloud-facts.md#nccl-net), after NCCL's
"host:pid:tid [dev] NCCL INFO " prefix:
    Using network OFI                               (aws-ofi-nccl under NCCL_NET=OFI; "Libfabric" without NCCL_NET)
    NET/Plugin: Loaded net plugin OFI (v10)
    NET/OFI Selected provider is efa, fabric is efa-direct (found 32 nics)
    NET/IB : Using [0]erdma_0:1/RoCE [RO]; OOB eth0:10.0.0.5<0>
    NET/Socket : Using [0]eth0:10.0.0.5<0>
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from health.config import Fabric
from health.result import Check, judge, skipped

DEBUG_ENV = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET"}
_PATTERNS = {
    "network": re.compile(r"NCCL INFO Using network (.+?)\s*$", re.M),
    "plugin": re.compile(r"NCCL INFO NET/Plugin: Loaded net plugin (.+?) \(v\d+\)", re.M),
    "provider": re.compile(r"NET/OFI Selected provider is (\S+), fabric is (\S+) \(found (\d+) nics\)", re.M),
    "ib": re.compile(r"NCCL INFO NET/IB : Using (.+?)(?:;|\s*$)", re.M),
    "socket": re.compile(r"NCCL INFO NET/Socket : Using (.+?)\s*$", re.M),
}


@dataclass(frozen=True)
class Selection:
    """What one NCCL log says NCCL selected; None for what it did not log."""

    network: str | None
    plugin: str | None
    provider: str | None
    nics: int | None
    devices: str | None

    def describe(self) -> str:
        parts = [f"network {self.network or 'not logged'}", f"plugin {self.plugin or 'internal'}"]
        if self.provider:
            parts.append(f"OFI provider {self.provider} ({self.nics} NICs)")
        if self.devices:
            parts.append(f"devices {self.devices}")
        return ", ".join(parts)


def parse(text: str) -> Selection:
    """The last selection in the log (a process that made several communicators logs one per communicator)."""

    def last(name: str):
        found = _PATTERNS[name].findall(text)
        return found[-1] if found else None

    provider = last("provider")
    return Selection(network=last("network"), plugin=last("plugin"), provider=provider[0] if provider else None,
                     nics=int(provider[2]) if provider else None, devices=last("ib") or last("socket"))


def read_logs(directory: Path) -> str:
    """Every NCCL log file in ``directory`` (NCCL_DEBUG_FILE=<dir>/nccl.%h.%p.log, one per process) as one text."""
    return "\n".join(p.read_text(errors="replace") for p in sorted(directory.glob("nccl.*.log")))


def chose_expected(network: str | None, fabric: Fabric) -> bool:
    """NCCL logged the network the plan expects: the name itself, as NCCL prints it (no other name can stand for it:
    with NCCL_NET set NCCL uses that network or none)."""
    return network == fabric.nccl_network


def checks(text: str, fabric: Fabric) -> list[Check]:
    """One row: 1 when the network NCCL logged is the one the plan's fabric and NCCL_NET expect."""
    if not text.strip():
        return [skipped("nccl-network", "node", "no NCCL log (the all-reduce did not run with NCCL)")]
    selection = parse(text)
    detail = (f"{selection.describe()}; the plan's {fabric.kind} fabric exports NCCL_NET={fabric.nccl_net}, "
              f"under which NCCL logs {fabric.nccl_network}")
    return [judge("nccl-network", "node", float(chose_expected(selection.network, fabric)), "match", 1.0, "==",
                  detail)]
