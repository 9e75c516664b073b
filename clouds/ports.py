"""Rules on the ports a stack sets: the rendezvous port and the NCCL range clear of every port a node listens on, and
a pinned range only where the fabric honours it."""

from __future__ import annotations

from collections.abc import Iterator

from plan import catalog, userdata
from plan.fabric import resolve_fabric
from plan.firewall import SSH_PORT
from plan.profile import CloudProfile
from spec.cluster import ClusterSpec
from spec.errors import Problem
from spec.stackfile import CLUSTER_KEY

# NCCL and every other outgoing connection of a node draw their ports from a pinned range.
MIN_PORT_RANGE = 256


def listening_ports() -> dict[int, str]:
    """Every port a node listens on besides the rendezvous port, with what listens there."""
    node_exporter, dcgm_exporter = userdata.METRICS_PORTS
    return {SSH_PORT: "SSH", node_exporter: "the node exporter", dcgm_exporter: "the DCGM exporter",
            userdata.PROMETHEUS_PORT: "Prometheus on the head", userdata.GRAFANA_PORT: "Grafana on the head"}


def ports(spec: ClusterSpec, cloud: CloudProfile) -> Iterator[Problem]:
    network = spec.network
    taken = listening_ports()
    if network.rendezvous_port in taken:
        yield Problem(f"{CLUSTER_KEY}.network.rendezvousPort", f"{network.rendezvous_port} is the port "
                      f"{taken[network.rendezvous_port]} listens on, on every node.",
                      "pick a port no node service uses, such as the default 29400.")
    if network.port_range is None:
        return
    low, high = network.port_range
    path = f"{CLUSTER_KEY}.network.ncclPortRange"
    row = catalog.lookup(spec.cloud, spec.instance_type)
    fabric = resolve_fabric(network.fabric, row) if row else "tcp"
    if fabric != "tcp":
        yield Problem(path, f"{spec.instance_type} runs NCCL over {fabric}, which needs every port open between "
                      "members, so a pinned range would not be what the firewall opens.",
                      "remove ncclPortRange, or set network.fabric: tcp to run NCCL over TCP inside the range.")
        return
    if high - low + 1 < MIN_PORT_RANGE:
        yield Problem(path, f"{low}-{high} holds fewer than {MIN_PORT_RANGE} ports; NCCL and every other outgoing "
                      "connection of the node draw from it.",
                      f"widen it to at least {MIN_PORT_RANGE} ports, e.g. 50000-51000.")
    inside = {port: what for port, what in {**taken, network.rendezvous_port: "the rendezvous"}.items()
              if low <= port <= high}
    if network.rendezvous_port in inside:
        yield Problem(path, f"contains the rendezvous port {network.rendezvous_port}.",
                      "move the range or network.rendezvousPort apart.")
    if clash := {port: what for port, what in inside.items() if port != network.rendezvous_port}:
        names = ", ".join(f"{port} ({what})" for port, what in sorted(clash.items()))
        yield Problem(path, f"contains {names}: the node's outgoing connections take their ports from this range, "
                      "so one could take a port a service must listen on.",
                      "move the range clear of 3000, 9090, 9100 and 9400, e.g. 50000-51000.")
