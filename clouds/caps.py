"""Stack checks against the cloud's own caps on what one stack builds: the rules one security group takes and the
largest system disk. A stack past them is refused here, named, rather than planned into thousands of resources the
cloud then refuses one by one (docs/cloud-facts.md#security-group-rules, #system-disks)."""

from __future__ import annotations

from collections.abc import Iterator

from plan import catalog
from plan.fabric import resolve_fabric
from plan.firewall import plan_firewall
from plan.profile import CloudProfile
from plan.userdata import METRICS_PORTS
from spec.cluster import ClusterSpec
from spec.errors import Problem
from spec.stackfile import CLUSTER_KEY


def firewall_rules(spec: ClusterSpec, cloud: CloudProfile) -> Iterator[Problem]:
    """The cluster's security group holds the rules the plan makes (one per SSH range, besides the cluster's own),
    within the cloud's cap."""
    most = cloud.limits.group_rules_max
    row = catalog.lookup(spec.cloud, spec.instance_type)
    if most is None or row is None:
        return
    network = spec.network
    fabric = resolve_fabric(network.fabric, row)
    rules = plan_firewall(fabric, network.port_range, network.rendezvous_port, METRICS_PORTS, network.ssh_cidrs,
                          network.allow_internet) + cloud.service_egress
    ingress = sum(1 for rule in rules if rule.direction == "ingress")
    counted = len(rules) if cloud.limits.group_rules_together else max(ingress, len(rules) - ingress)
    if counted > most:
        room = most - (counted - len(network.ssh_cidrs))
        scope = "in and out together" if cloud.limits.group_rules_together else "in each direction"
        yield Problem(f"{CLUSTER_KEY}.network.sshCidrs", f"{len(network.ssh_cidrs)} SSH ranges make {counted} rules in "
                      f"the cluster's security group, but {cloud.title} takes at most {most} {scope}.",
                      f"list at most {max(room, 0)} ranges: merge neighbouring ones into wider ranges, or reach the "
                      "nodes through one bastion network.")


def root_volume(spec: ClusterSpec, cloud: CloudProfile) -> Iterator[Problem]:
    """A system disk the cloud makes."""
    most = cloud.limits.root_volume_max_gb
    if most is not None and spec.storage.root_volume_gb > most:
        yield Problem(f"{CLUSTER_KEY}.storage.rootVolumeGb", f"{spec.storage.root_volume_gb} GiB is more than the "
                      f"{most} GiB system disk {cloud.title} makes.", f"lower it to at most {most}; data the job "
                      "reads belongs in the bucket.")
