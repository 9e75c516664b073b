"""What NCCL and aws-ofi-nccl log when a process forms its first communicator, emulated for the tests: the rules
written down here from their sources (docs/cloud-facts.md#nccl-net), apart from the plan's name table
(plan/fabric.py) and the gate's parser (cloud-init/health/nccl.py), so the node checks are fed what a
node's NCCL would print under the plan's nccl.env rather than a log typed to match the checks.

aws/aws-ofi-nccl src/nccl_ofi_interface_nvidia.cpp: the plugin calls itself "Libfabric" since 1.13.0, "AWS Libfabric"
up to 1.12; from 1.13.0 a constructor (nvidia_plugin_name_fixup) renames it "AWS Libfabric" when NCCL_NET equals
that and "OFI" when NCCL_NET equals "OFI" (strcasecmp both). include/nccl_ofi_log.h prefixes its lines "NET/OFI ";
src/nccl_ofi_net.cpp logs "Selected provider is %s, fabric is %s (found %d nics)".

NVIDIA/nccl v2.29.7-1 src/plugin/net.cc: the external plugin (libnccl-net.so; none under NCCL_NET_PLUGIN=none), then
the internal "IB" (src/transport/net_ib/common.cc; net_ib/init.cc: not under NCCL_IB_DISABLE=1) and "Socket"
(src/transport/net_socket.cc), in that order; a net is initialised only when NCCL_NET is unset or equals its name
(strcasecmp), the first that initialises is the communicator's, and with none NCCL warns "Failed to initialize any
NET plugin" and the init fails. The lines:
src/plugin/net/net_v10.cc "NET/Plugin: Loaded net plugin %s (v10)", src/transport/net_ib/init.cc "NET/IB : Using%s
%s; OOB %s:%s", net_socket.cc "NET/Socket : Using%s", src/init.cc "Using network %s"; src/debug.cc prefixes an INFO
line "<host>:<pid>:<tid> [<dev>] NCCL INFO " and a WARN "<host>:<pid>:<tid> [<dev>] <file>:<line> NCCL WARN ".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

FIRST_NEW_NAME = (1, 13)
"""The first aws-ofi-nccl release named "Libfabric" and renamed by NCCL_NET (v1.13.0-aws)."""


@dataclass(frozen=True)
class Node:
    """What a node's NCCL can find: the aws-ofi-nccl release the dynamic linker finds (None: none), the EFA devices
    it can open, the verbs device NCCL's IB transport can open (eRDMA, RoCE, InfiniBand), the socket interface."""

    plugin: tuple[int, int] | None = None
    efa_nics: int = 0
    verbs: str | None = None
    interface: str = "eth0:10.0.0.5<0>"


EFA = Node(plugin=(1, 21), efa_nics=32)  # a p5 on the DLAMI of 2026 (aws-ofi-nccl 1.21.1)
ERDMA = Node(verbs="erdma_0:1/RoCE")
HCC_RDMA = Node(verbs="mlx5_bond_0:1/RoCE")
PLAIN = Node()
NODE_OF_FABRIC = {"efa": EFA, "erdma": ERDMA, "rdma": HCC_RDMA, "tcp": PLAIN}
"""A healthy node of each fabric kind."""


class InitFailed(Exception):
    """NCCL could not initialise the network NCCL_NET names; ``log`` holds what it printed until then."""

    def __init__(self, log: str) -> None:
        super().__init__("NCCL error: invalid usage (Failed to initialize any NET plugin)")
        self.log = log


def plugin_name(release: tuple[int, int], nccl_net: str | None) -> str:
    """The name aws-ofi-nccl gives itself once loaded under NCCL_NET."""
    if release < FIRST_NEW_NAME:
        return "AWS Libfabric"
    wanted = (nccl_net or "").lower()
    return {"aws libfabric": "AWS Libfabric", "ofi": "OFI"}.get(wanted, "Libfabric")


def nccl_log(env: Mapping[str, str], node: Node, prefix: str = "ip-10-0-0-5:4242:4242 [0]") -> str:
    """The INIT/NET lines of one process's first communicator under ``env`` on ``node``; InitFailed when no network
    initialises."""
    wanted = env.get("NCCL_NET")
    lines: list[str] = []

    def info(message: str) -> None:
        lines.append(f"{prefix} NCCL INFO {message}")

    def chosen(name: str) -> str:
        info(f"Using network {name}")
        return "\n".join(lines) + "\n"

    def allowed(name: str) -> bool:
        return wanted is None or wanted.lower() == name.lower()

    if node.plugin and env.get("NCCL_NET_PLUGIN", "").lower() != "none":
        name = plugin_name(node.plugin, wanted)
        info(f"NET/Plugin: Loaded net plugin {name} (v10)")
        if allowed(name) and node.efa_nics:
            info(f"NET/OFI Selected provider is efa, fabric is efa-direct (found {node.efa_nics} nics)")
            return chosen(name)
    if allowed("IB") and node.verbs and env.get("NCCL_IB_DISABLE", "0") == "0":
        info(f"NET/IB : Using [0]{node.verbs} [RO]; OOB {node.interface}")
        return chosen("IB")
    if allowed("Socket"):
        info(f"NET/Socket : Using [0]{node.interface}")
        return chosen("Socket")
    lines.append(f"{prefix} plugin/net.cc:326 NCCL WARN Failed to initialize any NET plugin")
    raise InitFailed("\n".join(lines) + "\n")
