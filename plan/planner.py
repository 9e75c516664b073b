"""plan(spec) -> ClusterPlan: every decision about a cluster, made once, with no Pulumi and no I/O
beyond reading the bundled training code to hash it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from plan import catalog
from plan.bootstrap import render_user_data
from plan.bundle import bundle_sha256
from plan.cost import plan_cost
from plan.fabric import plan_fabric
from plan.facts import DeployFacts
from plan.fallback import launch_types
from plan.firewall import plan_firewall
from plan.identity import CLUSTER_TAG, cluster_identity, identity_digest, project_name
from plan.lifecycle import plan_lifecycle
from plan.mirrors import plan_mirrors
from plan.model import (
    HEAD,
    INSTANCES,
    ROLE_TAG,
    ROLES,
    WORKER,
    ClusterPlan,
    ImagePlan,
    MarketPlan,
    PipelinePlan,
    RolePlan,
    ScalingPlan,
    StoragePlan,
    WorkerGroupPlan,
    in_scaling_groups,
)
from plan.network import plan_network
from plan.node import NodePlan
from plan.placement import ask_of
from plan.prices import list_price, spot_ceiling
from plan.profile import CloudProfile
from plan.rollout import REFRESH, REPLACE, RolloutPlan
from plan.software import plan_software
from plan.userdata import METRICS_PORTS, Job, plan_node
from spec.cluster import BakedImage, ClusterSpec
from spec.errors import Problem, SpecError
from spec.jobs import job_args
from spec.stackfile import CLUSTER_KEY

# Where checkpoints go in the bucket; the code bundle sits beside them under code/.
CHECKPOINT_PREFIX = "checkpoints"


def _bucket(spec: ClusterSpec, cloud: CloudProfile, name: str, digest: str,
            facts: DeployFacts) -> tuple[str, str | None]:
    """The stack's bucket, else one named after the cluster plus the short hash of its identity (the same for every
    run of the stack, another for any other project, stack or region); with the account id the cloud's bucket names
    carry, if any. An existing bucket that is the stack's own default, or that names another account, is refused."""
    own = cloud.bucket_name(name, digest, spec.region, facts.account_id)
    existing = spec.storage.existing_bucket
    if existing and (problems := list(_existing_problems(existing, own, cloud, facts.account_id))):
        raise SpecError(problems)
    if written := spec.storage.checkpoint_bucket or existing:
        return written, cloud.bucket_account(written)
    return own, facts.account_id


def _existing_problems(existing: str, own: str, cloud: CloudProfile, account: str | None) -> Iterator[Problem]:
    field = f"{CLUSTER_KEY}.storage.existingBucket"
    if existing == own:
        yield Problem(field, f"{existing!r} is the bucket this stack makes itself when it names none: read as an "
                      "existing bucket, the next `pulumi up` would delete its encryption and public-access block, then "
                      "fail to delete the bucket, which holds the checkpoints.", "remove existingBucket; the stack "
                      "keeps its own bucket.")
    if (named := cloud.bucket_account(existing)) and account and named != account:
        yield Problem(field, f"{existing!r} ends in account {named}, but this stack deploys into account {account}: "
                      "its nodes' role could never reach that bucket.", f"name a bucket of account {account} "
                      f"(<name>-{account}), or remove existingBucket for the stack's own.")


def _storage(spec: ClusterSpec, cloud: CloudProfile, name: str, identity: str, digest: str,
             facts: DeployFacts) -> StoragePlan:
    """The bucket, and where in it the cluster keeps its objects: a bucket the stack does not own (`existingBucket`,
    which other clusters or people may use) only under a prefix of the cluster's identity, which its nodes' grants
    are limited to; its own bucket whole."""
    bucket, account = _bucket(spec, cloud, name, digest, facts)
    prefix = f"{identity}/" if spec.storage.existing_bucket is not None else ""
    sha = bundle_sha256(kernels=spec.job.kernels != "off")
    code_key = f"{prefix}code/{sha}.tar.gz"
    root = (f"file://{cloud.file_bucket.format(identity=identity)}" if cloud.bucket_scheme == "file"
            else f"{cloud.bucket_scheme}://{bucket}/{prefix}".rstrip("/"))
    upload = cloud.code_upload(spec.region, bucket, spec.storage.bundle_domain, spec.storage.endpoint)
    if isinstance(upload, str):
        raise ValueError(f"storage.bundleDomain reached the planner where it does not apply: {upload}")
    return StoragePlan(bucket=bucket, account_id=account, checkpoint_uri=f"{root}/{CHECKPOINT_PREFIX}",
                       code_key=code_key, code_uri=f"{root}/{code_key}", code_sha256=sha, code_upload=upload,
                       root_volume_gb=spec.storage.root_volume_gb, existing=spec.storage.existing_bucket is not None,
                       prefix=prefix)


def _pipeline(spec: ClusterSpec, cloud: CloudProfile) -> PipelinePlan:
    """Where the stack's pipeline runs: the stack's `storage.endpoint`, else the cloud's default for the region."""
    pipeline = cloud.pipeline(spec.region, spec.storage.endpoint)
    if isinstance(pipeline, str):
        raise ValueError(f"storage.endpoint reached the planner where it does not apply: {pipeline}")
    return pipeline


def _image(spec: ClusterSpec, cloud: CloudProfile, facts: DeployFacts) -> ImagePlan:
    """The stack's image; else the cloud's alias for `auto`; else the image the deploy-time look-up found, pinned. A
    baked image's driver is the one the bake found on its base (`auto`'s or, on a plain image, the pin)."""
    if isinstance(spec.image, BakedImage):
        from_auto = spec.image.base == "auto"
        return ImagePlan(ref=spec.image.baked, has_drivers=from_auto and cloud.auto_image.has_drivers, pinned=False,
                         baked=True)
    if spec.image != "auto":
        return ImagePlan(ref=spec.image, has_drivers=False, pinned=False)
    auto = cloud.auto_image
    if auto.alias is not None:
        return ImagePlan(ref=auto.alias, has_drivers=auto.has_drivers, pinned=False)
    if facts.image_id is None:
        raise ValueError(f"image: auto on {spec.cloud} needs the deploy-time image look-up (plan.facts)")
    return ImagePlan(ref=facts.image_id, has_drivers=auto.has_drivers, pinned=True)


def _market(spec: ClusterSpec, cloud: CloudProfile, row: catalog.InstanceType, facts: DeployFacts) -> MarketPlan:
    """The stack's market; a Capacity Block it names no reservation for is the one the deploy-time look-up found; a
    cloud whose spot needs a max price the stack did not set bids the on-demand list price."""
    m = spec.market
    reservation = m.reservation_id or facts.reservation_id
    if m.capacity_block and reservation is None:
        raise ValueError("a Capacity Block without reservationId needs the deploy-time look-up (plan.facts)")
    return MarketPlan(on_demand_base=max(m.on_demand_base - 1, 0), spot_percent=m.spot_percent,
                      spot_strategy=cloud.spot_strategies.get(m.spot_strategy, ""),
                      max_spot_price=spot_ceiling(m.max_spot_price, row, cloud.spot_bid_currency),
                      reservation_id=reservation, capacity_block=m.capacity_block)


def _job(spec: ClusterSpec, row: catalog.InstanceType) -> dict[str, Any]:
    """The settings the stack wrote, with the GPU's peak TFLOP/s from the catalog for MFU unless the stack set one."""
    stated = spec.job.model_dump(exclude_unset=True)
    peak = {"peak_tflops": f"{row.peak_tflops_bf16:g}"} if row.peak_tflops_bf16 and "peak_tflops" not in stated else {}
    return peak | stated


def _role(node: NodePlan, tags: tuple[tuple[str, str], ...]) -> RolePlan:
    """A role's node plan, rendered as its user-data, and its tags (the cluster's and its role)."""
    return RolePlan(role=node.role, node=node, user_data=render_user_data(node), tags=(*tags, (ROLE_TAG, node.role)))


def ranks_per_node(spec: ClusterSpec, row: catalog.InstanceType) -> int:
    """Training processes per node: the stack's choice, else one per GPU, else two on CPU-only nodes."""
    return spec.ranks_per_node or row.gpus or 2


def plan_rollout(mechanisms: Mapping[str, str], workers: tuple[WorkerGroupPlan, ...],
                 refresh_min_healthy_percent: int | None) -> tuple[RolloutPlan, ...]:
    """The head (by the mechanism the profile names for HEAD, else for INSTANCES; an instance at the fixed address
    is deleted before its successor) and each worker group, by the mechanism the cloud's profile names for its form;
    () where the cloud names none (its nodes are not made by `pulumi up` or `fleet up`)."""
    if not mechanisms:
        return ()
    head_mechanism = mechanisms.get(HEAD, mechanisms[INSTANCES])
    head = RolloutPlan(HEAD, HEAD, INSTANCES, 1, head_mechanism, head_mechanism == REPLACE, None)
    groups = tuple(RolloutPlan(group.name, WORKER, group.form, group.desired, mechanisms[group.form], False,
                               refresh_min_healthy_percent if mechanisms[group.form] == REFRESH else None)
                   for group in workers)
    return (head, *groups)


def plan(spec: ClusterSpec, stack: str, cloud: CloudProfile, facts: DeployFacts | None = None, *,
         project: str | None = None) -> ClusterPlan:
    """Decide the whole cluster for a spec that passed `clouds.rules.validate`, on its cloud's profile
    (`clouds.plans.plan_for` looks it up), with the deploy-time facts its `lookups` asked for; `project`: the
    Pulumi project (default: this one's, Pulumi.yaml)."""
    facts = facts or DeployFacts()
    row = catalog.lookup(spec.cloud, spec.instance_type)
    name = spec.name or stack
    project = project or project_name()
    digest = identity_digest(project, stack, spec.region)
    identity = cluster_identity(name, project, stack, spec.region)
    fabric = plan_fabric(spec.network.fabric, row, cloud.nccl_env)
    network = plan_network(spec.network.vpc_cidr, cloud.mtu[fabric.kind], cloud.nat_egress,
                           plan_mirrors(spec.network, cloud, spec.region))
    market = _market(spec, cloud, row, facts)
    scaling = ScalingPlan(nodes_min=spec.counts.min, nodes_desired=spec.counts.desired, nodes_max=spec.counts.max,
                          gpu_util_target=spec.autoscaling.gpu_util_target)
    placements = cloud.placement(ask_of(spec, row))
    if isinstance(placements, str):
        raise ValueError(f"unplaceable spec reached the planner: {placements}")
    storage = _storage(spec, cloud, name, identity, digest, facts)
    image = _image(spec, cloud, facts)
    software = plan_software(image, row, fabric.kind)
    ranks = ranks_per_node(spec, row)
    job = Job(name=name, nnodes=(spec.counts.min, spec.counts.max), ranks_per_node=ranks,
              rendezvous_port=spec.network.rendezvous_port, job_args=job_args(_job(spec, row)))
    firewall = plan_firewall(fabric.kind, spec.network.port_range, spec.network.rendezvous_port, METRICS_PORTS,
                             spec.network.ssh_cidrs, spec.network.allow_internet) + cloud.service_egress
    tags = ((CLUSTER_TAG, identity), ("gpufleet:stack", stack), ("managed-by", "gpufleet"),
            *sorted(spec.tags.items()))
    lifecycle = plan_lifecycle(cloud.lifecycle, market, spec.autoscaling.standby)
    workers = cloud.worker_groups(scaling, market, placements)
    grouped = in_scaling_groups(workers)
    head, worker = (_role(plan_node(spec, cloud, row, role, name=identity, job=job, fabric=fabric, network=network,
                                    storage=storage, software=software, market=market, lifecycle=lifecycle,
                                    in_scaling_group=role == WORKER and grouped), tags)
                    for role in ROLES)
    return ClusterPlan(
        name=name, stack=stack, identity=identity, cloud=spec.cloud, region=spec.region, zone=spec.zone, instance=row,
        image=image,
        software=software, network=network, firewall=firewall, fabric=fabric, placements=placements, market=market,
        scaling=scaling, workers=workers,
        lifecycle=lifecycle, rollout=plan_rollout(cloud.rollout, workers, lifecycle.refresh_min_healthy_percent),
        storage=storage, pipeline=_pipeline(spec, cloud), head=head,
        worker=worker, ranks_per_node=ranks, cost=plan_cost(cloud, list_price(row), market, scaling),
        tags=tags, capacity=facts.capacity,
        launch_types=launch_types(spec, facts.capacity))
