"""The node contract: everything one node role is told, as one typed, frozen NodePlan the planner decides per role
(plan.userdata.plan_node) and plan.bootstrap renders, generically, into the node's two settings files:

- /etc/gpufleet/node.env, which every node script sources (cloud-init/bin/gpufleet-lib.sh): one `GF_<FIELD>` line per
  field, in field order. A section (a nested dataclass: `software`, `health`) is flattened with its name as the
  prefix (`software.cuda` -> GF_SOFTWARE_CUDA, `health.thresholds.hbm_gbs` -> GF_HEALTH_THRESHOLDS_HBM_GBS); a flag
  is 1 or 0, None is '', a tuple is a bash array, a (key, value) pair in it reads KEY=value.
- /etc/gpufleet/node.json, which Python on the node reads (the health gate, cloud-init/health/config.py): the same
  fields under the same names, sections as objects, tuples as lists.

A field added here reaches both files, and with them every node script and the gate, with no other change: its value
is decided where the others are (plan_node, beside the constants that say why each setting is what it is).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from plan.thresholds import Thresholds


@dataclass(frozen=True)
class SoftwarePlan:
    """What one image runs: `install` (plain image: the exact driver), `check` (DL image: the minimum branch) or
    `baked` (an image `fleet image build` made: its recorded matrix must be this one; nothing is installed)."""

    mode: str  # "install" | "check" | "baked"
    driver: str  # the exact driver plain images install (and images baked from one hold); "" where the image brings
    # its own
    driver_min_branch: int  # the lowest driver branch the wheel's CUDA runs on
    cuda: str  # the CUDA the torch wheel is built for (it brings its own runtime)
    torch: str
    torch_index: str
    nccl: str  # the NCCL the torch wheel brings
    fabricmanager: str  # "" off NVSwitch hosts; "= driver" on them
    fabric_stack: str  # the fabric's driver stack, "" for TCP
    nccl_net: str  # NCCL_NET: the one network NCCL may use

    def to_json(self) -> str:
        """The matrix as the stack's `software` output shows it."""
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"


@dataclass(frozen=True)
class Mirrors:
    """Where a node fetches what it installs at boot instead of the internet's hosts (plan/mirrors.py decides them:
    the stack's network.*Mirror, else its cloud's in-VPC mirror in that region); "" = the upstream host."""

    pip: str  # a PyPI simple index (pip's index URL)
    apt: str  # an archive root that serves ubuntu/, debian/ and debian-security/ as the distributions lay them out
    # NVIDIA's CUDA repositories: <os>/x86_64/ under it, as under developer.download.nvidia.com/compute/cuda/repos
    cuda: str
    registry: str  # a Docker Hub mirror (docker's registry-mirrors)


@dataclass(frozen=True)
class HealthPlan:
    """What the health gate, its NCCL probe and the cluster acceptance hold the node to besides the node's own GPUs,
    fabric and NCCL_NET (cloud-init/health/README.md documents each), decided from the same values that configure
    what they check (plan/health.py)."""

    level: str  # "light" | "deep": how thorough the gate is (the stack's `gate`)
    dcgm_level: int  # DCGM's diagnostic level where dcgmi exists
    nccl_network: str  # the network name NCCL logs under the plan's NCCL_NET ("Using network <name>")
    thresholds: Thresholds  # absolute figures from the catalog row; None: judged against the node's peers only


@dataclass(frozen=True)
class NodePlan:
    """Everything one node role needs to boot into the job. Pure data; the module docstring says how it renders."""

    cluster: str  # the cluster's name: the monitor's label, the node's reports
    cloud: str  # a registered cloud's name (clouds): its node-script adapter goes with the user-data
    region: str
    role: str  # "head" | "worker"
    instance_type: str
    gpus: int  # GPUs per node the catalog promises (0 on CPU nodes); the gate expects every one
    nvswitch: bool  # NVSwitch host: nvidia-fabricmanager of exactly the driver's version
    fabric: str  # the plan's fabric: "efa" | "erdma" | "rdma" | "tcp" (not the catalog's: EFA types may run TCP)
    fabric_devices: int  # EFA devices / eRDMA ERIs / RDMA NICs the node must bring up (0 for tcp)
    mtu: int  # the primary interface's MTU
    # NCCL/libfabric env for this fabric, its NCCL_NET the one network NCCL may use; also /etc/gpufleet/nccl.env, in
    # systemd's EnvironmentFile= syntax, for whatever starts NCCL.
    nccl_env: tuple[tuple[str, str], ...]
    port_range: tuple[int, int] | None  # net.ipv4.ip_local_port_range pinned to it (NCCL's ports); None: the kernel's
    head_address: str  # the head's fixed private IP (the c10d rendezvous host)
    rendezvous_port: int
    command: tuple[str, ...]  # the role's torchrun argv, with the slots gpufleet-train fills (RolePlan.command)
    checkpoint_dir: str  # where the job writes checkpoints on the node (under the node's root in local mode)
    checkpoint_uri: str  # "s3://bucket/prefix", "oss://…", "cos://…" or "file:///path" (local)
    ckpt_sync_s: int  # how often gpufleet-ckpt-sync pushes checkpoints to the bucket
    code_uri: str  # the training code bundle, named by its hash
    code_sha256: str  # the bundle's hash: a change rolls the nodes because user-data changes
    bundle_fetch_tries: int  # how often the bundle fetch tries, this far apart
    bundle_fetch_wait_s: int
    spot: bool  # may run on spot capacity: the spot watcher runs
    # The worker group's termination hook (LifecyclePlan.drain): the spot watcher completes it once the checkpoint is
    # in the bucket; "" = none.
    drain_hook: str
    # The warm pool's launching hook (LifecyclePlan.launch_hook): completed once the node is installed (entering the
    # pool) and once its gate passed (leaving it); "" = none.
    launch_hook: str
    spot_notice_url: str  # the cloud's spot notice endpoint (CloudProfile); local: the fake metadata's
    spot_poll_s: int  # how often the watcher polls it
    spot_grace_s: int  # how long after a notice the watcher has to push the checkpoint
    # The cluster's own metric namespace its GPU utilisation goes to every minute (gpufleet-gpu-metric.timer): the
    # series its workers scale on; "" = the node publishes none.
    gpu_metric_namespace: str
    metadata_url: str  # the cloud's instance metadata root, ".../latest/meta-data"
    imds_token_url: str  # metadata session token URL where the cloud requires a token; "" = plain GETs
    imds_token_header: str  # the token's header; its TTL header adds "-ttl-seconds"
    software: SoftwarePlan  # the image's software matrix (gpufleet-driver holds the node to it)
    # Failure budget: gate failures with these reason prefixes are permanent (no replacement fixes them); once more
    # than `failure_budget` nodes recorded the same one under `failure_uri`, a failing node stops asking for a new one.
    # A node outside any group also writes its mark beside that folder (plan/heal.py node_marks; gpufleet-mark).
    permanent_failures: tuple[str, ...]
    failure_budget: int
    failure_uri: str
    node_exporter_port: int
    dcgm_exporter_port: int
    prometheus_port: int  # head only
    grafana_port: int  # head only
    dcgm_exporter_image: str  # the monitor's container images, pinned
    prometheus_image: str
    grafana_image: str
    monitor_packages: tuple[str, ...]  # what the monitor installs with apt where the image lacks it
    monitor_images: tuple[str, ...]  # every role's monitor images: what a bake pulls (one image serves every role)
    mirrors: Mirrors  # pip, apt, NVIDIA's CUDA repository and Docker Hub, where the plan names a mirror for them
    image_pull_timeout_s: int  # the monitor gives up on an image after this
    pip_packages: tuple[str, ...]  # the job's pip requirements for /opt/gpufleet/venv; () = the image's python
    tools: tuple[str, ...]  # the node's tools venv: the store client and the cloud's API SDK pins
    # What a baked image must hold, as (part, version) pairs (plan/matrix.py): the bake records them in the
    # image (/etc/gpufleet/image.json and its tags), a node booted from it checks them (cloud-init/health/image.py).
    image_matrix: tuple[tuple[str, str], ...]
    in_scaling_group: bool  # launched by the cloud's scaling group (its unhealthy path applies)
    local: bool  # local mode: no driver install, no sysctl outside the namespace, fake metadata, paths under a root
    health: HealthPlan  # what the gate holds the node to
