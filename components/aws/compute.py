"""Nodes: the plan's placement groups, one launch template per role, the head instance and the worker groups."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.realizers.encoding import gzip_base64
from plan.model import (
    MIXED,
    ClusterPlan,
    ImagePlan,
    Interface,
    LifecyclePlan,
    MarketPlan,
    PlacementPlan,
    RolePlan,
    WorkerGroupPlan,
)

ROOT_DEVICE = "/dev/sda1"
# Published by every GPU node (cloud-init/bin/gpufleet-gpu-metric, from DCGM) in the cluster's own namespace, one
# series per cluster: the Average of all nodes' points is the cluster's GPU utilisation, which target tracking needs
# (docs/cloud-facts.md#aws-gpu-metric).
GPU_METRIC = {"metric_name": "GPUUtilization", "statistic": "Average", "unit": "Percent"}
# The plan's placement kinds as EC2 placement strategies, and its standby state as a warm pool's.
STRATEGY = {"cluster": "cluster", "spread": "spread"}
POOL_STATE = {"stopped": "Stopped"}


@dataclass(frozen=True)
class ComputeArgs:
    """The slice of the plan the nodes are made of, and the subnet, group, profile and code bundle they use."""

    cluster: str
    instance_type: str
    worker_types: tuple[str, ...]
    image: ImagePlan
    interfaces: tuple[Interface, ...]
    root_volume_gb: int
    head_address: str
    market: MarketPlan
    placements: tuple[PlacementPlan, ...]
    roles: tuple[RolePlan, RolePlan]
    workers: tuple[WorkerGroupPlan, ...]
    lifecycle: LifecyclePlan
    gpu_util_target: float | None
    tags: dict[str, str]
    subnet_id: pulumi.Input[str]
    group_id: pulumi.Input[str]
    profile_arn: pulumi.Input[str]
    code: pulumi.Resource  # the code bundle the user-data names: every launch template waits for it

    @classmethod
    def of(cls, plan: ClusterPlan, subnet_id: pulumi.Input[str], group_id: pulumi.Input[str],
           profile_arn: pulumi.Input[str], code: pulumi.Resource) -> ComputeArgs:
        return cls(cluster=plan.identity, instance_type=plan.instance.name, worker_types=plan.worker_types,
                   image=plan.image,
                   interfaces=plan.fabric.interfaces, root_volume_gb=plan.storage.root_volume_gb,
                   head_address=plan.network.head_address,
                   market=plan.market, placements=plan.placements, roles=(plan.head, plan.worker),
                   workers=plan.workers, lifecycle=plan.lifecycle, gpu_util_target=plan.scaling.gpu_util_target,
                   tags=plan.tag_map, subnet_id=subnet_id, group_id=group_id, profile_arn=profile_arn, code=code)


def _interfaces(args: ComputeArgs, fixed_ip: str | None) -> list[dict]:
    """The plan's interfaces; each carries the security group, only the primary an address (never public)."""
    result = []
    for nic in args.interfaces:
        primary = nic.card == 0 and nic.device == 0
        spec = {"device_index": nic.device, "network_card_index": nic.card, "subnet_id": args.subnet_id,
                "security_groups": [args.group_id], "delete_on_termination": "true"}
        if nic.kind in ("efa", "efa-only"):
            spec["interface_type"] = nic.kind
        if primary:
            spec["associate_public_ip_address"] = "false"
            if fixed_ip:
                spec["private_ip_address"] = fixed_ip
        result.append(spec)
    return result


def _market_options(market: MarketPlan) -> dict:
    """Capacity Block or reservation targeting; spot is never set here (the group's mixed policy owns it)."""
    options: dict = {}
    if market.reservation_id:
        options["capacity_reservation_specification"] = {
            "capacity_reservation_target": {"capacity_reservation_id": market.reservation_id}}
    if market.capacity_block:
        options["instance_market_options"] = {"market_type": "capacity-block"}
    return options


def _launch_template(spec: dict, types: tuple[str, ...]) -> dict:
    """The group's launch template; with more than one type, an override per type in the plan's priority order (the
    list order is the priority: docs/cloud-facts.md#launch-fallback)."""
    if len(types) == 1:
        return {"launch_template_specification": spec}
    return {"launch_template_specification": spec, "overrides": [{"instance_type": kind} for kind in types]}


def _version(template: aws.ec2.LaunchTemplate) -> pulumi.Output[str]:
    """The template's latest version as a number: `$Latest` would neither start a refresh nor show in a diff."""
    return template.latest_version.apply(str)


class AwsCompute(pulumi.ComponentResource):
    """The head (on-demand, fixed address: the rendezvous host) and the workers (scaling group, spot mix)."""

    def __init__(self, name: str, args: ComputeArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:Compute", f"{name}-compute", None, opts)
        self._args, self._name = args, name
        child = pulumi.ResourceOptions(parent=self)
        self.placement_groups: dict[str, aws.ec2.PlacementGroup] = {}
        for index, group in enumerate(args.placements):
            # The plan's placement group (cluster: all nodes on one network spine; spread: one rack per node).
            self.placement_groups[group.kind] = aws.ec2.PlacementGroup(
                f"{name}-pg" if index == 0 else f"{name}-{group.kind}-pg", strategy=STRATEGY[group.kind],
                tags=args.tags, opts=child)
        head, worker = args.roles
        head_template = self._template(head, fixed_ip=args.head_address)
        # The head node: never spot, at the fixed address every worker rendezvouses with. Its template version is
        # pinned, so it is replaced when the template changes and only then, as the plan's lifecycle says (deleted
        # before its successor is created, since both would ask for the same fixed address).
        self.head = aws.ec2.Instance(
            f"{name}-head", launch_template={"id": head_template.id, "version": _version(head_template)},
            tags={**head.tag_map, "Name": f"{name}-head"},
            opts=pulumi.ResourceOptions(parent=self,
                                        delete_before_replace=args.lifecycle.head_replacement is not None))
        self.workers = [self._workers(group, worker) for group in args.workers]
        self.register_outputs({"headId": self.head.id})

    def _placement(self, role: str) -> dict | None:
        groups = [self.placement_groups[p.kind] for p in self._args.placements if role in p.roles]
        return {"group_name": groups[0].name} if groups else None

    def _template(self, role: RolePlan, fixed_ip: str | None = None) -> aws.ec2.LaunchTemplate:
        args, name = self._args, self._name
        tags = role.tag_map
        # Launch template of one role: IMDSv2 only, encrypted gp3 root, the fabric's interfaces.
        return aws.ec2.LaunchTemplate(
            f"{name}-{role.role}-lt", image_id=args.image.ref, instance_type=args.instance_type,
            user_data=gzip_base64(role.user_data),
            iam_instance_profile={"arn": args.profile_arn},
            metadata_options={"http_tokens": "required", "http_endpoint": "enabled",
                              "http_put_response_hop_limit": 2, "instance_metadata_tags": "enabled"},
            block_device_mappings=[{"device_name": ROOT_DEVICE, "ebs": {
                "volume_size": args.root_volume_gb, "volume_type": "gp3", "encrypted": "true",
                "delete_on_termination": "true"}}],
            network_interfaces=_interfaces(args, fixed_ip),
            placement=self._placement(role.role), update_default_version=True, tags=tags,
            tag_specifications=[{"resource_type": kind, "tags": tags}
                                for kind in ("instance", "volume", "network-interface")],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[args.code]), **_market_options(args.market))

    def _workers(self, workers: WorkerGroupPlan, role: RolePlan) -> aws.autoscaling.Group:
        args, name, market, lifecycle = self._args, self._name, self._args.market, self._args.lifecycle
        template = self._template(role)
        spec = {"launch_template_id": template.id, "version": _version(template)}
        capacity: dict = {"launch_template": {"id": template.id, "version": _version(template)}}
        if workers.market == MIXED:
            capacity = {"mixed_instances_policy": {
                "launch_template": _launch_template(spec, args.worker_types),
                "instances_distribution": {
                    "on_demand_allocation_strategy": "prioritized",
                    "on_demand_base_capacity": market.on_demand_base,
                    "on_demand_percentage_above_base_capacity": 100 - market.spot_percent,
                    "spot_allocation_strategy": market.spot_strategy,
                    "spot_max_price": "" if market.max_spot_price is None else f"{market.max_spot_price:.4f}"}}}
        elif len(args.worker_types) > 1:
            # On demand throughout, falling back at launch to the next type where one runs out of stock.
            capacity = {"mixed_instances_policy": {
                "launch_template": _launch_template(spec, args.worker_types),
                "instances_distribution": {"on_demand_allocation_strategy": "prioritized",
                                           "on_demand_percentage_above_base_capacity": 100}}}
        if lifecycle.capacity_rebalance:
            capacity["capacity_rebalance"] = True
        warm_pool = ({"warm_pool": {"pool_state": POOL_STATE[lifecycle.standby_state], "min_size": lifecycle.standby}}
                     if lifecycle.standby else {})
        refresh = ({"instance_refresh": {"strategy": "Rolling", "preferences": {
            "min_healthy_percentage": lifecycle.refresh_min_healthy_percent}}}
            if lifecycle.refresh_min_healthy_percent is not None else {})
        if lifecycle.launch_hook is not None:
            # A warm pool's instance is held (Warmed:Pending:Wait, and again at Pending:Wait when it leaves the
            # pool) until its node completes this hook once its bootstrap is done: the pool would stop it mid-way
            # (docs/cloud-facts.md#rollout-aws-warm-pool). Only at creation do hooks reach the first instances.
            warm_pool["initial_lifecycle_hooks"] = [{
                "name": lifecycle.launch_hook.hook, "lifecycle_transition": "autoscaling:EC2_INSTANCE_LAUNCHING",
                "heartbeat_timeout": lifecycle.launch_hook.timeout_s, "default_result": "ABANDON"}]
        # Made at the plan's desired size (a group made without one starts at min_size); where a scaling policy owns
        # the size after that, `pulumi up` never puts it back (docs/cloud-facts.md#rollout-aws-desired).
        size = {"desired_capacity": workers.desired}
        sized = pulumi.ResourceOptions(parent=self,
                                       ignore_changes=["desiredCapacity"] if args.gpu_util_target else None)
        # Workers: bounded by the plan, rolled when their launch template (user-data, code hash) changes: the pinned
        # version changes with it, and a change of the launch template starts the instance refresh.
        group = aws.autoscaling.Group(
            f"{name}-{workers.name}", min_size=workers.min_size, max_size=workers.max_size,
            vpc_zone_identifiers=[args.subnet_id],
            health_check_type="EC2", health_check_grace_period=lifecycle.health_grace_s,
            tags=[{"key": key, "value": value, "propagate_at_launch": True} for key, value in role.tags],
            opts=sized, **size, **capacity, **warm_pool, **refresh)
        if lifecycle.drain is not None:
            # Checkpoint before leaving: termination waits for the node's spot watcher (or the drain's timeout).
            aws.autoscaling.LifecycleHook(
                f"{name}-{workers.name}-drain", name=lifecycle.drain.hook, autoscaling_group_name=group.name,
                lifecycle_transition="autoscaling:EC2_INSTANCE_TERMINATING",
                heartbeat_timeout=lifecycle.drain.timeout_s, default_result="CONTINUE",
                opts=pulumi.ResourceOptions(parent=self))
        if args.gpu_util_target is not None:
            # Scale out on the average GPU utilisation the nodes publish, never in: a busy job's GPUs stay near full
            # whatever its size, and a scale-in takes a rank from the running job
            # (docs/cloud-facts.md#rollout-gpu-target).
            aws.autoscaling.Policy(
                f"{name}-gpu-util", autoscaling_group_name=group.name, policy_type="TargetTrackingScaling",
                target_tracking_configuration={
                    "target_value": args.gpu_util_target, "disable_scale_in": True,
                    "customized_metric_specification": {
                        **GPU_METRIC, "namespace": args.roles[0].node.gpu_metric_namespace,
                        "metric_dimensions": [{"name": "Cluster", "value": args.cluster}]}},
                opts=pulumi.ResourceOptions(parent=self))
        return group
