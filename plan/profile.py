"""What the planner and validator need to know about a cloud, declared up front (SkyPilot-style)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from plan.limits import CloudLimits
from plan.model import (
    CodeUpload,
    FirewallRule,
    MarketPlan,
    PipelinePlan,
    PlacementPlan,
    ScalingPlan,
    StoreApi,
    WorkerGroupPlan,
)
from plan.node import Mirrors
from plan.permissions import Call
from plan.workers import mixed_group

if TYPE_CHECKING:
    from plan.placement import PlacementAsk
    from spec.cluster import ClusterSpec
    from spec.errors import Problem

# Features a stack can ask for; a cloud that lacks one names it in `unsupported` with the reason.
CAPACITY_BLOCK = "capacity block"
RESERVATION = "capacity reservation"
SPOT = "spot capacity"
SPOT_MIX = "spot and on-demand mixed in one scaling group"
WARM_POOL = "warm standby pool"
GPU_UTIL_SCALING = "scaling on GPU utilisation"


@dataclass(frozen=True)
class ImageQuery:
    """The image `image: auto` stands for where the cloud has no alias: the newest public build of this OS."""

    os: str
    version: str


@dataclass(frozen=True)
class AutoImage:
    """What `image: auto` is on a cloud: an alias the cloud resolves at every launch, or a look-up at deploy time."""

    alias: str | None = None
    lookup: ImageQuery | None = None
    has_drivers: bool = False


# What `storage.endpoint` says where the store takes every account's data calls from anywhere (CloudProfile.pipeline).
ANYWHERE = "its public endpoint takes every account's data calls from anywhere."


def from_anywhere(region: str, endpoint: str | None) -> PipelinePlan | str:
    """A cloud whose store answers the pipeline anywhere through the S3 SDK's own endpoint and credentials."""
    return ANYWHERE if endpoint else PipelinePlan("", StoreApi())


def gpufleet_bucket(name: str, digest: str, region: str, account_id: str | None) -> str:
    """The default checkpoint bucket: the cluster's name and a short hash of where it lives; at most 49 characters (a
    name of at most CLUSTER_NAME_MAX = 31, spec/names.py), within every cloud's 63."""
    return f"gpufleet-{name}-{digest}"


def no_account(bucket: str) -> str | None:
    return None


def default_endpoint(region: str, bucket: str, domain: str | None, endpoint: str | None) -> CodeUpload | str:
    """A cloud whose default endpoint takes the bundle from anywhere: nothing else to name, no domain to bind."""
    return "its default endpoint takes the upload from anywhere." if domain else CodeUpload()


def no_mirrors(region: str) -> Mirrors:
    """A cloud whose nodes fetch from the upstream hosts everywhere."""
    return Mirrors(pip="", apt="", cuda="", registry="")


def nowhere(region: str) -> bool:
    return False


def no_hub_mirror_advice(region: str) -> str:
    return ""


def no_placement(ask: PlacementAsk) -> tuple[PlacementPlan, ...] | str:
    """A cloud that declares no placement groups places nodes by zone, and cannot spread them."""
    return "it has no spread placement for nodes." if ask.anti_affinity else ()


def one_group(scaling: ScalingPlan, market: MarketPlan, placements: tuple[PlacementPlan, ...]
              ) -> tuple[WorkerGroupPlan, ...]:
    return mixed_group(scaling, market)


@dataclass(frozen=True)
class CloudProfile:
    """Facts of one cloud that decide a plan: fabrics, endpoints, MTUs, limits and unsupported features."""

    name: str
    title: str  # the cloud's own name for itself, as messages say it ("Alibaba Cloud")
    region_key: str | None
    fabrics: frozenset[str]
    mtu: Mapping[str, int]
    bucket_scheme: str
    spot_notice_url: str
    # What it accepts for the names, networks and sizes a stack sets (clouds.names, clouds.networks).
    limits: CloudLimits
    metadata_url: str = ""  # instance metadata root (".../latest/meta-data") the node scripts read
    # Session token for metadata GETs where the cloud requires one: PUT to the URL with "<header>-ttl-seconds",
    # then send "<header>: <token>" (AWS IMDSv2, Alibaba's hardened mode); "" = plain GETs.
    imds_token_url: str = ""
    imds_token_header: str = ""
    imds_token_max_ttl_s: int = 0  # the longest token it grants ("<header>-ttl-seconds": 1 to this)
    # The address of a metadata host its URLs name by a DNS name (host -> address); elsewhere the host is the address.
    metadata_hosts: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # How it names an instance, from random hex digits, the private address and the region: (instance id, the
    # hostname it gives the OS) (docs/cloud-facts.md#instance-names); None = unknown.
    instance_names: Callable[[str, str, str], tuple[str, str]] | None = None
    # The cloud-init datasource setting of the images its nodes boot (cloud.cfg.d text); "" = unknown.
    image_datasources: str = ""
    # The host names a node's store client contacts for (region, bucket), the default endpoint first; None where
    # the bucket is no object store.
    store_hosts: Callable[[str, str], tuple[str, ...]] | None = None
    # The pinned SDK its node scripts call the cloud's API through (cloud-init/clouds/<name>_api.py, installed into
    # the node's tools venv beside the store client); () = no such tool (AWS: the store client is its CLI).
    api_client: tuple[str, ...] = ()
    # Every call its nodes make with their role and the action it is authorised by: what the node policy grants
    # (plan/permissions.py, docs/cloud-facts.md#node-permissions); () = the nodes have no role.
    node_calls: tuple[Call, ...] = ()
    # The currency a spot bid is in where the cloud's spot instances need a max price: a stack without
    # market.maxSpotPrice bids the type's on-demand list price in it (plan/prices.py); "" = no bid needed.
    spot_bid_currency: str = ""
    spot_discount: float = 0.0
    reserved_discount: float = 0.0
    # Base64 bytes of user-data a node may get: 16 KB on EC2, ECS and CVM alike
    # (docs/cloud-facts.md#user-data-limit); None: no limit.
    max_user_data_bytes: int | None = 16384
    # The stack's market.spotStrategy as the cloud's API names it; a strategy it lacks (every one, for a cloud that
    # takes none) is planned as none ("").
    spot_strategies: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    unsupported: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # The module whose `realize(plan)` declares the cloud's resources (a `Realizer`, components/realizers/contract.py),
    # and the package its Pulumi type tokens start with (`<package>:<module>/<name>:<Type>`; policy/clouds/<name>.py
    # reads those resources). None: no resources.
    realizer: str = ""
    pulumi_package: str | None = None
    # The module whose `validation(resources, region)` has the cloud's provider check a preview offline
    # (`fleet plan --validate`); "" = none.
    validator: str = ""
    auto_image: AutoImage = AutoImage()
    # The default bucket's name (some clouds put the account id in it) and the account id a bucket name carries.
    bucket_name: Callable[[str, str, str, str | None], str] = gpufleet_bucket
    bucket_account: Callable[[str], str | None] = no_account
    account_in_bucket: bool = False
    # How `pulumi up` writes the code bundle into a region's bucket (region, bucket), given the stack's
    # `storage.bundleDomain` and `storage.endpoint`; or the reason the domain does not apply there (plan/planner.py,
    # clouds/rules.py).
    code_upload: Callable[[str, str, str | None, str | None], CodeUpload | str] = default_endpoint
    # Where the pipeline runs and how it reads the bucket from there, by region and the stack's `storage.endpoint`;
    # or the reason that setting does not apply there (fleet/node_marks.py, the workflows).
    pipeline: Callable[[str, str | None], PipelinePlan | str] = from_anywhere
    # Placement groups for a stack, or the reason the cloud cannot place it as asked (plan/placement.py).
    placement: Callable[[PlacementAsk], tuple[PlacementPlan, ...] | str] = no_placement
    # The worker groups the cloud launches for the workers' bounds and market (plan/workers.py).
    worker_groups: Callable[[ScalingPlan, MarketPlan, tuple[PlacementPlan, ...]], tuple[WorkerGroupPlan, ...]] = (
        one_group)
    # Lifecycle settings its groups offer (plan/lifecycle.py).
    lifecycle: frozenset[str] = frozenset()
    # How a change of user-data reaches running nodes, by form (INSTANCES: the head and fixed workers;
    # SCALING_GROUP; HEAD where the head differs from INSTANCES): plan/rollout.py; empty where no nodes
    # are made.
    rollout: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # The cloud's instance states (as its describe call and the provider's refresh report them) of a node that no longer
    # runs and will not by itself: `fleet heal` replaces such a node where no group does (plan/heal.py).
    dead_states: frozenset[str] = frozenset()
    nat_egress: bool = True  # nodes leave through a NAT gateway (the local cluster has none)
    # Egress the cloud's own services need where its security groups deny what no rule allows (DNS, NTP).
    service_egress: tuple[FirewallRule, ...] = ()
    # The mirrors its nodes reach inside the cloud in a region (pip, apt, NVIDIA's CUDA repository, Docker Hub), where
    # the region needs them: a stack's own network.*Mirror replaces each (plan/mirrors.py); "" = the upstream host.
    mirrors: Callable[[str], Mirrors] = no_mirrors
    # Regions from which the internet's package hosts (pypi.org, NVIDIA's, Docker Hub, nvcr.io) are slow or blocked
    # (the Chinese mainland): there `fleet plan` names each thing no mirror serves and the setting that names one.
    needs_mirrors: Callable[[str], bool] = nowhere
    # Where the cloud has no Docker Hub mirror for every account: in such a region, how the stack names its own
    # (`fleet plan` says so when network.registryMirror is unset); "" where Docker Hub or the cloud's mirror serves.
    hub_mirror_advice: Callable[[str], str] = no_hub_mirror_advice
    # The nodes are processes on this machine (local mode: no driver install, the host's Python, paths under a node
    # root), and NCCL/gloo settings such nodes need besides the fabric's.
    runs_here: bool = False
    # Where a `file` bucket lives ({name}: the cluster's): a directory every node of the cluster sees.
    file_bucket: str = ""
    nccl_env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # Rules only this cloud needs (e.g. spot inside a deployment set); run after the common ones.
    rules: tuple[Callable[[ClusterSpec, CloudProfile], Iterable[Problem]], ...] = ()
