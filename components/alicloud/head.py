"""The head node: on-demand, at the plan's fixed address, in the plan's deployment set, with its ERIs."""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from components.alicloud.nodes import NodeArgs, ecs_node
from plan.model import HEAD, RolePlan

# The plan's placement kinds as deployment set strategies.
STRATEGY = {"cluster": "LowLatency"}


class AliHead(pulumi.ComponentResource):
    """The rendezvous host every worker connects to; never spot. It makes the plan's deployment set, which the
    on-demand workers of fixed groups join too."""

    def __init__(self, name: str, args: NodeArgs, role: RolePlan, address: str,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:alicloud:Head", f"{name}-head", None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.deployment_set = None
        for placement in args.placements_of(role):
            # The plan's deployment set: one network topology in one zone for the nodes that join it.
            self.deployment_set = alicloud.ecs.EcsDeploymentSet(f"{name}-ds", deployment_set_name=f"{name}-ds",
                                                                strategy=STRATEGY[placement.kind], opts=child)
        self.instance = ecs_node(f"{name}-head", args, role, nodes=HEAD, spot=False, opts=child, private_ip=address,
                                 deployment_set_id=self.deployment_set.id if self.deployment_set else None)
        self.register_outputs({"instanceId": self.instance.id})
