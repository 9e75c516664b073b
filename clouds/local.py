"""The local cloud: network namespaces on this machine; spot notices come from a fake metadata endpoint."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

from plan.lifecycle import DRAIN
from plan.limits import NOT_UNICAST, CloudLimits
from plan.model import HEAD, INSTANCES, MarketPlan, PlacementPlan, ScalingPlan
from plan.placement import PlacementAsk
from plan.profile import CAPACITY_BLOCK, GPU_UTIL_SCALING, RESERVATION, WARM_POOL, AutoImage, CloudProfile
from plan.rollout import HOLD, ROLL
from plan.workers import per_market
from spec.clouds import REGION_KEYS


def placement(ask: PlacementAsk) -> tuple[PlacementPlan, ...] | str:
    return "every local node runs on this machine." if ask.anti_affinity else ()


def worker_groups(scaling: ScalingPlan, market: MarketPlan, placements: tuple[PlacementPlan, ...]):
    """`fleet up` starts the desired workers, on-demand ones first, then the spot share (spot is emulated)."""
    return per_market(scaling, market, INSTANCES)


def instance_names(digits: str, private_ip: str, region: str) -> tuple[str, str]:
    """The local cloud's own names for a node's instance."""
    return f"local-{digits[:12]}", f"local-{private_ip.replace('.', '-')}"


LOCAL = CloudProfile(
    name="local",
    title="the local cloud",
    region_key=REGION_KEYS["local"],
    fabrics=frozenset({"tcp"}),
    mtu=MappingProxyType({"tcp": 1500}),
    bucket_scheme="file",
    spot_notice_url="http://{metadata}/latest/meta-data/spot/instance-action",
    limits=CloudLimits(
        vpc_prefixes=(8, 28),
        subnet_prefixes=(8, 29),
        subnet_reserved=2,  # network and broadcast address of a Linux bridge's subnet
        addresses_from_head=True,  # here/local/layout.py, here/boot/network.py
        vpc_refused=NOT_UNICAST,
    ),
    metadata_url="http://{metadata}/latest/meta-data",
    instance_names=instance_names,
    spot_strategies=MappingProxyType({"price-capacity-optimized": "emulated"}),
    unsupported=MappingProxyType({
        CAPACITY_BLOCK: "a local cluster has no capacity to reserve.",
        RESERVATION: "a local cluster has no capacity to reserve.",
        WARM_POOL: "a local cluster keeps no standby nodes.",
        GPU_UTIL_SCALING: "a local cluster does not autoscale.",
    }),
    # Local nodes are this machine: no image, and no driver stack to install.
    auto_image=AutoImage(alias="local", has_drivers=True),
    placement=placement,
    worker_groups=worker_groups,
    # `fleet up` run again with new code rolls the workers while the job goes on (here/local/rollout.py): each hears
    # it leaves as a node its group takes away does (the termination hook's notice, cloud-init/clouds/local.sh),
    # checkpoints and leaves, then boots anew; the head keeps the job.
    lifecycle=frozenset({DRAIN}),
    rollout=MappingProxyType({HEAD: HOLD, INSTANCES: ROLL}),
    # A node whose machine ended (here/local/cluster.py machines): `fleet heal` boots a worker's anew.
    dead_states=frozenset({"ended"}),
    realizer="components.local.outputs",
    max_user_data_bytes=None,
    nat_egress=False,
    runs_here=True,
    file_bucket="/tmp/gpufleet-{identity}/bucket",
    # Local nodes share the host's hostname, which gloo would resolve to the host: pin both to the node's own eth0.
    nccl_env=MappingProxyType({"NCCL_SOCKET_IFNAME": "eth0", "GLOO_SOCKET_IFNAME": "eth0"}),
)

# `fleet up --stack local --boot`: the same cluster's nodes as machines the boot harness boots (here/boot):
# real cloud-init and systemd run the node scripts in cloud mode, their job's packages go into the node's own venv,
# and a metadata service answers on the link-local address, with plain GETs and the spot notice in AWS's words. The
# machines are plain KVM-like ones whose cloud-init reads NoCloud's seed, as from a cidata disk. The bucket stays a
# directory of this machine, mounted into every machine (not under /tmp, which systemd empties at boot).
LOCAL_MACHINES = dataclasses.replace(
    LOCAL,
    runs_here=False,
    metadata_url="http://169.254.169.254/latest/meta-data",
    spot_notice_url="http://169.254.169.254/latest/meta-data/spot/instance-action",
    image_datasources="datasource_list: [ NoCloud, None ]\n",
    file_bucket="/srv/gpufleet-{identity}/bucket",
)
