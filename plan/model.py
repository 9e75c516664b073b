"""The cloud-neutral plan: plain frozen dataclasses, no Pulumi. Realizers read it and decide nothing."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import TYPE_CHECKING

from plan.catalog import InstanceType
from plan.limits import own_tag
from plan.node import Mirrors, NodePlan, SoftwarePlan

if TYPE_CHECKING:
    from plan.candidates import Availability
    from plan.rollout import RolloutPlan

HEAD, WORKER = "head", "worker"
ROLES = (HEAD, WORKER)
# Every node carries its role as a tag: the scaling group's and the console's way to tell the head from workers.
ROLE_TAG = "gpufleet:role"
# Worker group forms and markets.
SCALING_GROUP, INSTANCES = "scaling-group", "instances"
ON_DEMAND, SPOT, MIXED = "on-demand", "spot", "mixed"


@dataclass(frozen=True)
class Subnet:
    """One subnet in the cluster's zone."""

    cidr: str


@dataclass(frozen=True)
class NetworkPlan:
    """Addresses: the VPC, a private subnet for nodes, a public one for the NAT gateway, the head's fixed IP."""

    vpc_cidr: str
    private: Subnet
    public: Subnet
    head_address: str
    mtu: int
    nat: bool  # nodes reach the internet through a NAT gateway in the public subnet (no NAT on the local cluster)
    mirrors: Mirrors  # where nodes fetch packages and containers (plan/mirrors.py)

    def node_addresses(self, count: int) -> tuple[str, ...]:
        """Fixed addresses for clouds that do not hand them out (the local cluster): head first."""
        first = ipaddress.IPv4Address(self.head_address)
        return tuple(str(first + index) for index in range(count))


@dataclass(frozen=True)
class FirewallRule:
    """One allowed flow. peer is "self" (members of the cluster's security group) or a CIDR."""

    direction: str
    protocol: str
    from_port: int
    to_port: int
    peer: str
    description: str


@dataclass(frozen=True)
class Interface:
    """One network interface of a node: network card, device index and kind (efa, efa-only, interface, erdma...)."""

    card: int
    device: int
    kind: str


@dataclass(frozen=True)
class FabricPlan:
    """The inter-node fabric: its kind, the interfaces per node, the devices the health gate expects, NCCL env, and
    the network name NCCL logs under that env (what the gate expects, plan/fabric.py)."""

    kind: str
    interfaces: tuple[Interface, ...]
    devices: int
    nccl_env: tuple[tuple[str, str], ...]
    nccl_network: str

    @property
    def nccl_net(self) -> str:
        """The one network NCCL may use (NCCL_NET in nccl_env)."""
        return dict(self.nccl_env)["NCCL_NET"]


@dataclass(frozen=True)
class MarketPlan:
    """Capacity for the workers (the head is always on-demand or reserved)."""

    on_demand_base: int
    spot_percent: int
    spot_strategy: str
    max_spot_price: float | None
    reservation_id: str | None
    capacity_block: bool

    @property
    def uses_spot(self) -> bool:
        return self.spot_percent > 0

    def split(self, workers: int) -> tuple[int, int]:
        """Workers as (on-demand, spot): the base first, then the spot share above it rounded down (on-demand wins)."""
        above_base = max(workers - self.on_demand_base, 0)
        spot = above_base * self.spot_percent // 100
        return workers - spot, spot


@dataclass(frozen=True)
class ScalingPlan:
    """Node bounds: the head is one fixed node, the workers scale between their bounds."""

    nodes_min: int
    nodes_desired: int
    nodes_max: int
    gpu_util_target: float | None

    @property
    def workers_min(self) -> int:
        return self.nodes_min - 1

    @property
    def workers_desired(self) -> int:
        return self.nodes_desired - 1

    @property
    def workers_max(self) -> int:
        return self.nodes_max - 1

    @property
    def policy_sized(self) -> bool:
        """A scaling policy owns the workers' size once their group is made (`pulumi up` sets it then only): the
        GPU-utilisation target, which only scales out, so a GPU-bound job takes the group to its max and it stays
        there (docs/cloud-facts.md#rollout-gpu-target)."""
        return self.gpu_util_target is not None


@dataclass(frozen=True)
class PlacementPlan:
    """One placement group: how it places nodes, what the cloud calls it, and the roles whose nodes join it."""

    kind: str  # "cluster": one network spine | "spread": a host or rack per node | "hpc-cluster": an RDMA domain
    label: str  # the cloud's own name for it, as the diagram draws it
    roles: tuple[str, ...]


@dataclass(frozen=True)
class WorkerGroupPlan:
    """One set of workers the cloud launches: a scaling group or fixed instances, with its market and bounds."""

    name: str  # "workers", "on-demand" or "spot": the suffix of its resources' names
    form: str  # SCALING_GROUP | INSTANCES (min = desired = max)
    market: str  # ON_DEMAND | SPOT | MIXED: the market plan's on-demand base, then its spot share
    min_size: int
    desired: int
    max_size: int


def in_scaling_groups(workers: tuple[WorkerGroupPlan, ...]) -> bool:
    """The workers are launched by the cloud's scaling groups, so they report failures to them (GF_IN_SCALING_GROUP)
    and their role may act on those groups; fixed instances have no group to report to."""
    return bool(workers) and all(group.form == SCALING_GROUP for group in workers)


@dataclass(frozen=True)
class DrainPlan:
    """A lifecycle hook on each worker group. The termination one: a worker the group takes away (scale-in,
    rebalance, refresh, unhealthy) waits until its spot watcher has checkpointed and completed the hook, at most
    `timeout_s`. The launching one: a new worker waits until its bootstrap is done and it completed the hook."""

    hook: str  # the hook's name, which the node's spot watcher completes (cloud-init/bin/gpufleet-spot)
    timeout_s: int


@dataclass(frozen=True)
class LifecyclePlan:
    """How the cloud keeps and replaces nodes; None or False where it has no such setting."""

    health_grace_s: int | None  # a new node's time to boot and pass its gate before health checks count
    refresh_min_healthy_percent: int | None  # roll workers when their launch settings change, this share in service
    capacity_rebalance: bool  # replace a spot node at the cloud's rebalance recommendation, before its notice
    standby: int  # stopped nodes kept warm for fast scale-out
    standby_state: str | None  # "stopped"
    drain: DrainPlan | None  # workers checkpoint before the group terminates them
    # With a warm pool: a launching hook that holds each new worker until its node completes it, bootstrap done.
    launch_hook: DrainPlan | None
    # Where a change to the head's launch settings replaces the head: how, as the preview says. It is deleted before
    # its successor is created, since both would ask for the same fixed address. None: the head is updated in place.
    head_replacement: str | None


@dataclass(frozen=True)
class CodeUpload:
    """How `pulumi up` writes the code bundle into the bucket: through the provider's default endpoint, or, where the
    cloud refuses data calls there (docs/cloud-facts.md#alibaba-oss-public-endpoint), through another one. Nodes
    read the bundle inside the network either way."""

    endpoint: str = ""  # the object-storage endpoint the upload goes through; "" = the provider's default
    bound_domain: str = ""  # a custom domain the stack binds to the bucket for the upload; "" = none
    needs: str = ""  # what the deploying account or machine needs for it, as `fleet plan` says it; "" = nothing


@dataclass(frozen=True)
class StoreApi:
    """How the deploying side (`fleet heal`, `fleet roll`) reads the cluster's bucket through the store's S3 API: its
    endpoint (None: the S3 SDK's own) and the environment variables holding the pipeline's key id, secret and
    optional token (none: the SDK's own credential chain)."""

    endpoint: str | None = None
    credentials: tuple[str, ...] = ()


# The GitHub Actions runner of a stack whose pipeline runs anywhere, and the label of a self-hosted runner inside a
# region's network ({region}: the cloud's region id), as the deploy, heal and drift workflows pick them
# (docs/gitops.md, "Where the pipeline runs").
HOSTED_RUNNER = "ubuntu-latest"
REGION_RUNNER = "gpufleet-{region}"


@dataclass(frozen=True)
class PipelinePlan:
    """Where `pulumi up`, `fleet roll`, `fleet heal` and the drift check run for the stack, and how they reach its
    bucket from there: anywhere, or inside the cloud region's network, where the store's data calls go through its
    internal endpoint (docs/cloud-facts.md#alibaba-oss-public-endpoint). `fleet plan --json` says it ("pipeline"),
    and the workflows pick their runner from it."""

    runs_in: str  # the region whose network they must run inside; "" = anywhere
    store: StoreApi  # the bucket's S3 API from there (the nodes' marks, `fleet heal`'s records)
    needs: str = ""  # what running them there needs, as `fleet plan` says it; "" = nothing

    @property
    def runner(self) -> tuple[str, ...]:
        """The labels of the GitHub Actions runner that runs them: GitHub's own, or a self-hosted one in the region."""
        return ("self-hosted", REGION_RUNNER.format(region=self.runs_in)) if self.runs_in else (HOSTED_RUNNER,)


@dataclass(frozen=True)
class StoragePlan:
    """Where checkpoints and the training code bundle live, how the bundle gets there, each node's root volume."""

    bucket: str
    account_id: str | None  # the account id the bucket's name carries, where the cloud's names carry one
    checkpoint_uri: str
    code_key: str
    code_uri: str
    code_sha256: str
    code_upload: CodeUpload
    root_volume_gb: int
    existing: bool = False  # the stack's `existingBucket`: read, never created, configured or deleted by the stack
    # Where in the bucket the cluster's objects are ("<identity>/" in a bucket the stack does not own, "" in its
    # own): every object key and the nodes' grants start with it.
    prefix: str = ""


@dataclass(frozen=True)
class ImagePlan:
    """The machine image: the id the stack names, a cloud-side alias the cloud resolves at each launch, or the id a
    deploy-time look-up found for `image: auto`.

    A looked-up image is pinned: the realizer keeps each node's image when a later look-up finds a newer one, so
    `pulumi up` never rolls nodes because the cloud published an image (docs/design.md, "Images").
    """

    ref: str
    has_drivers: bool  # False: a plain OS image, the node installs the pinned driver stack
    pinned: bool
    # A node image `fleet image build` baked for this stack: the node checks its recorded matrix and installs nothing;
    # has_drivers then says what the image it was baked from brought.
    baked: bool = False


@dataclass(frozen=True)
class RolePlan:
    """What is different between the head and the workers: what their nodes are told (the node plan) and its
    rendering as user-data, and the tags they carry.

    The node plan's `command` is the argv gpufleet-train executes, with four slots only the booted node fills:
    {head_address} (the local cluster's loopback mode rewrites it), {local_addr} (the node's own address toward the
    head), {node_id} (the id the node keeps in its state directory) and {checkpoint_dir} (under the node's root in
    local mode).
    """

    role: str
    node: NodePlan
    user_data: str  # the node plan as #cloud-config (plan.bootstrap.render_user_data)
    tags: tuple[tuple[str, str], ...]

    @property
    def spot(self) -> bool:
        return self.node.spot

    @property
    def command(self) -> tuple[str, ...]:
        return self.node.command

    @property
    def gpu_metric(self) -> bool:
        """Its nodes publish their GPU utilisation: every node of a cluster whose workers scale on it."""
        return bool(self.node.gpu_metric_namespace)

    @property
    def tag_map(self) -> dict[str, str]:
        return dict(self.tags)


@dataclass(frozen=True)
class CostPlan:
    """Hourly cost of the desired node count, with the price table's date and source; where a scaling policy may grow
    the cluster (and never shrinks it), the expected cost at its max too (`ceiling_hourly`)."""

    currency: str
    on_demand_hourly: float | None
    expected_hourly: float | None
    price_date: str
    price_source: str
    ceiling_hourly: float | None = None


@dataclass(frozen=True)
class ClusterPlan:
    """Everything a realizer needs, decided once, in one place."""

    name: str
    stack: str
    # What tags, the nodes' permissions and role names are scoped by: unique per project, stack and region
    # (plan/identity.py), where `name` is only the user's label.
    identity: str
    cloud: str
    region: str
    zone: str
    instance: InstanceType
    image: ImagePlan
    software: SoftwarePlan
    network: NetworkPlan
    firewall: tuple[FirewallRule, ...]
    fabric: FabricPlan
    placements: tuple[PlacementPlan, ...]
    market: MarketPlan
    scaling: ScalingPlan
    workers: tuple[WorkerGroupPlan, ...]
    lifecycle: LifecyclePlan
    rollout: tuple[RolloutPlan, ...]  # how a change reaches the running head and each worker group
    storage: StoragePlan
    pipeline: PipelinePlan
    head: RolePlan
    worker: RolePlan
    ranks_per_node: int
    cost: CostPlan
    tags: tuple[tuple[str, str], ...]
    capacity: tuple[Availability, ...] = ()  # each candidate's availability at deploy time; () = none asked
    # The types worker scaling groups launch, highest priority first (plan/fallback.py); () = the planned.
    launch_types: tuple[str, ...] = ()

    @property
    def worker_types(self) -> tuple[str, ...]:
        """The instance types a worker scaling group may launch, highest priority first: the planned type first."""
        return self.launch_types or (self.instance.name,)

    @property
    def tag_map(self) -> dict[str, str]:
        """Tags of every resource that is not a node (nodes carry their role's) nor an object in the bucket."""
        return dict(self.tags)

    @property
    def object_tag_map(self) -> dict[str, str]:
        """Tags of the objects gpufleet writes into the bucket (the code bundle): gpufleet's own, which name the
        cluster, not the stack's. An object takes at most OBJECT_TAGS_MAX (S3, COS), far fewer than the stack may
        write (docs/cloud-facts.md#object-tags); the bucket, which cost allocation reads, carries them all."""
        return {key: value for key, value in self.tags if own_tag(key)}
