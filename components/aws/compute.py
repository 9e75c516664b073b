"""Nodes: a cluster placement group, one launch template per role, the head instance and the worker group."""

from __future__ import annotations

import base64
import gzip

import pulumi
import pulumi_aws as aws

from components.plan.model import ClusterPlan, RolePlan

ROOT_DEVICE = "/dev/sda1"
# Published by every GPU node (cloud-init/bin/gpufleet-gpu-metric, from DCGM), one series per cluster: the Average
# of all nodes' points is the cluster's GPU utilisation, which target tracking needs (docs/cloud-facts.md).
GPU_METRIC = {"metric_name": "GPUUtilization", "namespace": "gpufleet", "statistic": "Average", "unit": "Percent"}
# A worker the group takes away (scale-in, capacity rebalance, refresh, unhealthy) waits in Terminating:Wait until its
# spot watcher has checkpointed and completed this hook, at most DRAIN_TIMEOUT_S; then the group goes on anyway.
DRAIN_HOOK = "gpufleet-drain"
DRAIN_TIMEOUT_S = 600
HEAD_REPLACEMENT = ("the head is replaced (deleted first, so its fixed address is free) whenever its launch template "
                    "gets a new version; the job stops with a checkpoint and resumes from it on the new head")


def _interfaces(plan: ClusterPlan, subnet_id: pulumi.Input[str], group_id: pulumi.Input[str],
                fixed_ip: str | None) -> list[dict]:
    """The plan's interfaces; each carries the security group, only the primary an address (never public)."""
    result = []
    for nic in plan.fabric.interfaces:
        primary = nic.card == 0 and nic.device == 0
        spec = {"device_index": nic.device, "network_card_index": nic.card, "subnet_id": subnet_id,
                "security_groups": [group_id], "delete_on_termination": "true"}
        if nic.kind in ("efa", "efa-only"):
            spec["interface_type"] = nic.kind
        if primary:
            spec["associate_public_ip_address"] = "false"
            if fixed_ip:
                spec["private_ip_address"] = fixed_ip
        result.append(spec)
    return result


def _market_options(plan: ClusterPlan) -> dict:
    """Capacity Block or reservation targeting; spot is never set here (the group's mixed policy owns it)."""
    market = plan.market
    options: dict = {}
    if market.reservation_id:
        options["capacity_reservation_specification"] = {
            "capacity_reservation_target": {"capacity_reservation_id": market.reservation_id}}
    if market.capacity_block:
        options["instance_market_options"] = {"market_type": "capacity-block"}
    return options


def _version(template: aws.ec2.LaunchTemplate) -> pulumi.Output[str]:
    """The template's latest version as a number: `$Latest` would neither start a refresh nor show in a diff."""
    return template.latest_version.apply(str)


class AwsCompute(pulumi.ComponentResource):
    """The head (on-demand, fixed address: the rendezvous host) and the workers (scaling group, spot mix)."""

    def __init__(self, name: str, plan: ClusterPlan, subnet_id: pulumi.Input[str], group_id: pulumi.Input[str],
                 profile_arn: pulumi.Input[str], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:Compute", f"{name}-compute", None, opts)
        self._plan, self._name = plan, name
        self._subnet_id, self._group_id, self._profile_arn = subnet_id, group_id, profile_arn
        child = pulumi.ResourceOptions(parent=self)
        self.placement_group = None
        if plan.placement_group:
            # All nodes on one network spine: the lowest latency EFA can give.
            self.placement_group = aws.ec2.PlacementGroup(f"{name}-pg", strategy="cluster", tags=plan.tag_map,
                                                          opts=child)
        head_template = self._template(plan.head, fixed_ip=plan.network.head_address)
        # The head node: never spot, at the fixed address every worker rendezvouses with. Its template version is
        # pinned, so a replacement happens when the template changes and only then; deleted before its successor is
        # created, because both would ask for the same fixed address (HEAD_REPLACEMENT).
        self.head = aws.ec2.Instance(
            f"{name}-head", launch_template={"id": head_template.id, "version": _version(head_template)},
            tags={**plan.tag_map, "Name": f"{name}-head", "gpufleet:role": "head"},
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True))
        self.workers = self._workers(plan) if plan.scaling.workers_max > 0 else None
        self.register_outputs({"headId": self.head.id})

    def _template(self, role: RolePlan, fixed_ip: str | None = None) -> aws.ec2.LaunchTemplate:
        plan, name = self._plan, self._name
        tags = {**plan.tag_map, "gpufleet:role": role.role}
        placement = {"group_name": self.placement_group.name} if self.placement_group else None
        # Launch template of one role: IMDSv2 only, encrypted gp3 root, the fabric's interfaces.
        return aws.ec2.LaunchTemplate(
            f"{name}-{role.role}-lt", image_id=plan.image.ref, instance_type=plan.instance.name,
            # gzip keeps the cloud-config under EC2's 16 KB; cloud-init unpacks it. mtime=0: same bytes every run.
            user_data=base64.b64encode(gzip.compress(role.user_data.encode(), mtime=0)).decode(),
            iam_instance_profile={"arn": self._profile_arn},
            metadata_options={"http_tokens": "required", "http_endpoint": "enabled",
                              "http_put_response_hop_limit": 2, "instance_metadata_tags": "enabled"},
            block_device_mappings=[{"device_name": ROOT_DEVICE, "ebs": {
                "volume_size": plan.storage.root_volume_gb, "volume_type": "gp3", "encrypted": "true",
                "delete_on_termination": "true"}}],
            network_interfaces=_interfaces(plan, self._subnet_id, self._group_id, fixed_ip),
            placement=placement, update_default_version=True, tags=tags,
            tag_specifications=[{"resource_type": kind, "tags": tags}
                                for kind in ("instance", "volume", "network-interface")],
            opts=pulumi.ResourceOptions(parent=self), **_market_options(plan))

    def _workers(self, plan: ClusterPlan) -> aws.autoscaling.Group:
        name, scaling, market = self._name, plan.scaling, plan.market
        template = self._template(plan.worker)
        spec = {"launch_template_id": template.id, "version": _version(template)}
        capacity: dict = {"launch_template": {"id": template.id, "version": _version(template)}}
        if market.uses_spot:
            capacity = {"mixed_instances_policy": {
                "launch_template": {"launch_template_specification": spec},
                "instances_distribution": {
                    "on_demand_base_capacity": market.on_demand_base,
                    "on_demand_percentage_above_base_capacity": 100 - market.spot_percent,
                    "spot_allocation_strategy": market.spot_strategy,
                    "spot_max_price": "" if market.max_spot_price is None else f"{market.max_spot_price:.4f}"}},
                "capacity_rebalance": True}
        warm_pool = ({"warm_pool": {"pool_state": "Stopped", "min_size": scaling.standby}}
                     if scaling.standby else {})
        # Workers: bounded by the stack, rolled when their launch template (user-data, code hash) changes: the pinned
        # version changes with it, and a change of the launch template starts the instance refresh.
        group = aws.autoscaling.Group(
            f"{name}-workers", min_size=scaling.workers_min, max_size=scaling.workers_max,
            desired_capacity=scaling.workers_desired, vpc_zone_identifiers=[self._subnet_id],
            health_check_type="EC2", health_check_grace_period=900,
            instance_refresh={"strategy": "Rolling", "preferences": {"min_healthy_percentage": 50}},
            tags=[{"key": key, "value": value, "propagate_at_launch": True}
                  for key, value in {**plan.tag_map, "gpufleet:role": "worker"}.items()],
            opts=pulumi.ResourceOptions(parent=self), **capacity, **warm_pool)
        # Checkpoint before leaving: termination waits for the node's spot watcher (or DRAIN_TIMEOUT_S).
        aws.autoscaling.LifecycleHook(
            f"{name}-drain", name=DRAIN_HOOK, autoscaling_group_name=group.name,
            lifecycle_transition="autoscaling:EC2_INSTANCE_TERMINATING", heartbeat_timeout=DRAIN_TIMEOUT_S,
            default_result="CONTINUE", opts=pulumi.ResourceOptions(parent=self))
        if scaling.gpu_util_target is not None:
            # Scale on the average GPU utilisation the nodes publish.
            aws.autoscaling.Policy(
                f"{name}-gpu-util", autoscaling_group_name=group.name, policy_type="TargetTrackingScaling",
                target_tracking_configuration={
                    "target_value": scaling.gpu_util_target,
                    "customized_metric_specification": {
                        **GPU_METRIC, "metric_dimensions": [{"name": "Cluster", "value": plan.name}]}},
                opts=pulumi.ResourceOptions(parent=self))
        return group
