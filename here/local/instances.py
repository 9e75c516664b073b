"""Each local node as the metadata service (here.metadata) knows it: an instance the local cloud names
(clouds/local.py instance_names), answered on a port of its own at the bridge's address (or on loopback
without namespaces), so that a node reads its own spot notice at the cloud's path."""

from __future__ import annotations

import hashlib

from clouds import profile
from components.realizers.encoding import gzip_base64
from here.local.errors import EXIT_USAGE, LocalError
from here.local.layout import Layout, Node
from here.metadata import state
from here.metadata.state import Instance, Listener
from plan.model import ClusterPlan

BASE_PORT = 8000


def port(lay: Layout, node: Node) -> int:
    return BASE_PORT + lay.nodes.index(node)


def instance(plan: ClusterPlan, node: Node) -> Instance:
    """The node's instance: the same id at every `up` of the cluster (it comes from the node's namespace name)."""
    cloud = profile(plan.cloud)
    if cloud.instance_names is None:
        raise LocalError(f"cloud '{cloud.name}' does not say how it names instances (CloudProfile.instance_names)")
    digits = hashlib.sha256(node.namespace.encode()).hexdigest()
    instance_id, hostname = cloud.instance_names(digits, node.address, plan.region)
    user_data = (plan.head if node.role == "head" else plan.worker).user_data
    return Instance(instance_id=instance_id, private_ip=node.address, mac="", instance_type=plan.instance.name,
                    region=plan.region, zone=plan.zone, image_id=plan.image.ref, role="", hostname=hostname,
                    user_data_b64=gzip_base64(user_data), tokens_required=False, spot=node.spot)


def write(plan: ClusterPlan, lay: Layout, address: str) -> None:
    """What the service serves for this cluster, each node's instance on its own port at `address`."""
    nodes = [(node, instance(plan, node)) for node in lay.nodes]
    state.write(lay.metadata, profile(plan.cloud), [inst for _, inst in nodes],
                [Listener(address, port(lay, node), inst.instance_id) for node, inst in nodes])


def set_spot_notice(plan: ClusterPlan, lay: Layout, name: str, warning_s: float) -> None:
    if not (lay.metadata / state.CONFIG).is_file():
        raise LocalError(f"cluster '{plan.name}' is not running: no metadata service to announce a notice on",
                         EXIT_USAGE)
    state.set_spot_notice(lay.metadata, instance(plan, lay.node(name)).instance_id, warning_s)


def clear_spot_notice(plan: ClusterPlan, lay: Layout, name: str) -> None:
    state.clear_spot_notice(lay.metadata, instance(plan, lay.node(name)).instance_id)
