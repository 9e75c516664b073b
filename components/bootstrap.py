"""Node bootstrap: what one node role needs to boot into the job, rendered as cloud-init user-data.

The planner builds one NodeBootstrap per role; `render_user_data` turns it into `#cloud-config` text. Its write_files
carry only what a node needs to reach its bucket (and to report when it cannot): the entry script, the bucket copy
and report scripts, their shared library, the node's settings as a shell env file and the NCCL env file. Everything
else (the other node scripts, the systemd units, the monitoring config) comes with the content-addressed code bundle
(components.bundle), whose hash user-data names, so any change still rolls the nodes.
On a cloud, runcmd runs `gpufleet-node install` (bundle -> scripts and units) and enables the units: gate (driver,
fabric, health) -> training, with the spot watcher, the checkpoint sync and the exporters beside it. In local mode
the local cluster's cloud-config installer (here.local.cloudconfig) writes the same files under a node root
and runs `GPUFLEET_ROOT=<root> <root>/opt/gpufleet/bin/gpufleet-node start` (install, gate, training) in the node's
namespace.
No secret is ever rendered: nodes reach buckets and cloud APIs through their instance role.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

import jinja2

from components.paths import PROJECT_ROOT

CLOUD_INIT = PROJECT_ROOT / "cloud-init"
# What user-data carries: enough to fetch the bundle (and report a node that cannot); the rest comes from the bundle.
USER_DATA_SCRIPTS = ("gpufleet-lib.sh", "gpufleet-node", "gpufleet-report", "gpufleet-store")

BIN = "/opt/gpufleet/bin"
ETC = "/etc/gpufleet"
ENTRY = f"{BIN}/gpufleet-node"
# The node's own cloud adapter (cloud-init/clouds/<cloud>.sh), which gpufleet-lib.sh sources.
CLOUD_ADAPTER = f"{BIN}/gpufleet-cloud.sh"

SPOT_POLL_S = 5  # poll the notice every 5 s (docs/cloud-facts.md#aws-spot)
SPOT_GRACE_S = 90  # the shortest notice is 120 s (docs/cloud-facts.md#aws-spot): time to push the checkpoint
CKPT_SYNC_S = 300
# A fresh node's role credentials and NAT route can lag cloud-init: the bundle fetch retries this often, this far apart.
BUNDLE_FETCH_TRIES = 20
BUNDLE_FETCH_WAIT_S = 15
# The monitor pulls each container image within this: a registry the node cannot reach fails it in minutes, not never.
IMAGE_PULL_TIMEOUT_S = 300
# The node's one object-store client (cloud-init/bin/gpufleet-lib.sh aws_cli), installed from PyPI into the node's tools
# venv where the image lacks it: S3, and OSS and COS through their S3 APIs (docs/cloud-facts.md#oss-s3-api,
# #tencent-cos).
STORE_CLIENT = "awscli==1.46.3"
CLOUD_API = f"{BIN}/gpufleet-cloud-api"  # the cloud's API tool (cloud-init/clouds/<cloud>_api.py), where it has one
IMAGES = {
    "dcgm_exporter": "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04",
    "prometheus": "prom/prometheus:v3.5.0",
    "grafana": "grafana/grafana-oss:11.6.0",
}


@dataclass(frozen=True)
class NodeBootstrap:
    """Everything one node role needs to boot into the job; built by the planner, rendered here. Pure data."""

    cluster: str  # cluster/stack name
    cloud: str  # a registered cloud's name (components.clouds); its node-script adapter goes with the user-data
    region: str
    role: str  # "head" | "worker"
    instance_type: str
    gpus: int  # GPUs per node the catalog promises (0 on local CPU nodes)
    nvswitch: bool  # needs nvidia-fabricmanager of exactly the driver's version
    fabric: str  # "efa" | "erdma" | "rdma" | "tcp"
    fabric_devices: int  # expected EFA devices / eRDMA ERIs / RDMA NICs (0 for tcp)
    mtu: int  # MTU to set on the primary interface
    nccl_env: tuple[tuple[str, str], ...]  # NCCL/libfabric env for this fabric, decided by the planner
    port_range: tuple[int, int] | None  # when set: net.ipv4.ip_local_port_range pinned to it
    head_address: str  # fixed private IP of the head node (c10d rendezvous host)
    rendezvous_port: int  # 29400
    command: tuple[str, ...]  # the role's torchrun argv, with the slots gpufleet-train fills (RolePlan.command)
    checkpoint_dir: str  # local dir on the node where the job writes checkpoints
    checkpoint_uri: str  # "s3://bucket/prefix", "oss://…", "cos://…" or "file:///path" (local)
    code_uri: str  # the training code bundle (tar.gz of training/) named by its hash
    code_sha256: str  # the bundle's hash (a change rolls the nodes because user-data changes)
    spot: bool  # this role may run on spot/preemptible capacity -> start the spot watcher
    # The worker group's termination hook (LifecyclePlan.drain): the spot watcher runs on every such worker and
    # completes the hook once the checkpoint is in the bucket; "" = none.
    drain_hook: str
    # Publish the node's GPU utilisation every minute (gpufleet-gpu-metric.timer): the series the workers' group
    # scales on (RolePlan.gpu_metric).
    gpu_metric: bool
    spot_notice_url: str  # the cloud's spot notice endpoint (CloudProfile); local: a fake endpoint URL
    metadata_url: str  # the cloud's instance metadata root, ".../latest/meta-data"
    imds_token_url: str  # metadata session token URL where the cloud requires a token; "" = plain GETs
    imds_token_header: str  # the token's header (CloudProfile.imds_token_header); its TTL header adds "-ttl-seconds"
    health_config: str  # /etc/gpufleet/health.json: what the gate holds the node to (components.plan.health)
    driver_version: str  # the exact NVIDIA driver a plain image installs, e.g. "580.95.05"; "" on DL images
    cuda_version: str  # the CUDA the job's torch wheel is built for, e.g. "13.0"
    driver_min_branch: int  # the lowest driver branch that CUDA runs on (NVIDIA's table); DL images are held to it
    software_json: str  # the image's software matrix (SoftwarePlan) for /etc/gpufleet/software.json; "" = local
    plain_image: (
        bool  # True: install the pinned driver/CUDA (and fabric stack); False: the cloud's DL image, verify only
    )
    metrics_ports: tuple[int, int]  # (node exporter, dcgm exporter)
    prometheus_port: int  # head only
    grafana_port: int  # head only
    local: (
        bool  # local mode: no driver install, no sysctl outside the namespace, fake metadata, paths under a node root
    )
    # pip requirements of the job (e.g. "torch==2.13.0"), installed into /opt/gpufleet/venv; () = the image's python
    pip_packages: tuple[str, ...] = ()
    # The cloud's API SDK pins (CloudProfile.api_client): with the store client, the node's tools venv
    api_client: tuple[str, ...] = ()
    # Launched by the cloud's scaling group (its unhealthy path applies); False: an instance the stack declares
    in_scaling_group: bool = False
    registry_mirror: str = ""  # the Docker Hub mirror the monitor's containers come through; "" = Docker Hub
    # Failure budget: gate failures with these reason prefixes are permanent (no replacement fixes them); once more
    # than `failure_budget` nodes recorded the same one under `failure_uri`, a failing node stops asking for a new one.
    permanent_failures: tuple[str, ...] = ()
    failure_budget: int = 0
    failure_uri: str = ""


@dataclass(frozen=True)
class NodeFile:
    """One file a node gets through write_files."""

    path: str
    content: bytes
    mode: str = "0644"


def adapter(cloud: str) -> bytes:
    """A cloud's node-script adapter; a cloud without one has no user-data (fail closed)."""
    path = CLOUD_INIT / "clouds" / f"{cloud}.sh"
    if not path.is_file():
        raise FileNotFoundError(f"no node-script adapter for cloud {cloud!r}: add cloud-init/clouds/{cloud}.sh")
    return path.read_bytes()


def _quote(value: object) -> str:
    return "'" + str(value).replace("'", "'\\''") + "'"


def shell_value(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (tuple, list)):
        return "(" + " ".join(map(_quote, value)) + ")"
    return _quote(value)


def node_env(node: NodeBootstrap) -> str:
    """The node's settings as a bash file the scripts source (arrays for argument lists)."""
    settings = {
        "cluster": node.cluster,
        "cloud": node.cloud,
        "region": node.region,
        "role": node.role,
        "gpus": node.gpus,
        "nvswitch": node.nvswitch,
        "fabric": node.fabric,
        "fabric_devices": node.fabric_devices,
        "mtu": node.mtu,
        "port_range": " ".join(map(str, node.port_range)) if node.port_range else "",
        "head_address": node.head_address,
        "rendezvous_port": node.rendezvous_port,
        "command": node.command,
        "checkpoint_dir": node.checkpoint_dir,
        "checkpoint_uri": node.checkpoint_uri,
        "ckpt_sync_s": CKPT_SYNC_S,
        "code_uri": node.code_uri,
        "code_sha256": node.code_sha256,
        "bundle_fetch_tries": BUNDLE_FETCH_TRIES,
        "bundle_fetch_wait_s": BUNDLE_FETCH_WAIT_S,
        "spot": node.spot,
        "drain_hook": node.drain_hook,
        "spot_notice_url": node.spot_notice_url,
        "spot_poll_s": SPOT_POLL_S,
        "spot_grace_s": SPOT_GRACE_S,
        "metadata_url": node.metadata_url,
        "imds_token_url": node.imds_token_url,
        "imds_token_header": node.imds_token_header,
        "driver_version": node.driver_version,
        "cuda_version": node.cuda_version,
        "driver_min_branch": node.driver_min_branch,
        "permanent_failures": node.permanent_failures,
        "failure_budget": node.failure_budget,
        "failure_uri": node.failure_uri,
        "plain_image": node.plain_image,
        "node_exporter_port": node.metrics_ports[0],
        "dcgm_exporter_port": node.metrics_ports[1],
        "prometheus_port": node.prometheus_port,
        "grafana_port": node.grafana_port,
        "pip_packages": node.pip_packages,
        "tools": (STORE_CLIENT, *node.api_client),
        "in_scaling_group": node.in_scaling_group,
        "registry_mirror": node.registry_mirror,
        "image_pull_timeout_s": IMAGE_PULL_TIMEOUT_S,
        "local": node.local,
        **{f"{name}_image": image for name, image in IMAGES.items()},
    }
    lines = [
        f"# gpufleet settings for {node.cluster} {node.role} nodes; sourced by {BIN}/gpufleet-lib.sh.",
        "# shellcheck disable=SC2034",
        *(f"GF_{key.upper()}={shell_value(value)}" for key, value in settings.items()),
    ]
    return "\n".join(lines) + "\n"


def nccl_env(node: NodeBootstrap) -> str:
    """The one env file torchrun's workers get NCCL/libfabric settings from (systemd EnvironmentFile= syntax)."""
    lines = [f"# NCCL/fabric env for {node.fabric} ({node.instance_type}), decided by the planner."]
    lines += [f"{key}={shlex.quote(value)}" for key, value in node.nccl_env]
    return "\n".join(lines) + "\n"


def node_files(node: NodeBootstrap) -> list[NodeFile]:
    """The files user-data writes on this role's nodes, in a stable order."""
    files = [
        NodeFile(f"{BIN}/{name}", (CLOUD_INIT / "bin" / name).read_bytes(), "0644" if name.endswith(".sh") else "0755")
        for name in USER_DATA_SCRIPTS
    ]
    files.append(NodeFile(CLOUD_ADAPTER, adapter(node.cloud)))
    if node.api_client:
        files.append(NodeFile(CLOUD_API, (CLOUD_INIT / "clouds" / f"{node.cloud}_api.py").read_bytes()))
    files.append(NodeFile(f"{ETC}/node.env", node_env(node).encode()))
    files.append(NodeFile(f"{ETC}/nccl.env", nccl_env(node).encode()))
    files.append(NodeFile(f"{ETC}/health.json", node.health_config.encode()))
    if node.software_json:
        files.append(NodeFile(f"{ETC}/software.json", node.software_json.encode()))
    if node.port_range:
        lo, hi = node.port_range
        conf = f"# NCCL's ephemeral ports inside the firewall's range\nnet.ipv4.ip_local_port_range = {lo} {hi}\n"
        files.append(NodeFile("/etc/sysctl.d/60-gpufleet-ports.conf", conf.encode()))
    return files


def _units(node: NodeBootstrap) -> list[str]:
    units = [
        "gpufleet-gate.service",
        "gpufleet-train.service",
        "gpufleet-ckpt-sync.service",
        "gpufleet-monitor.service",
    ]
    if node.spot or node.drain_hook:
        units.append("gpufleet-spot.service")
    if node.role == "head":
        units += ["gpufleet-discover.service", "gpufleet-discover.timer"]
    if node.gpu_metric:
        units += ["gpufleet-gpu-metric.service", "gpufleet-gpu-metric.timer"]
    return units


def _entry(f: NodeFile) -> dict:
    return {"path": f.path, "permissions": f.mode, "content": f.content.decode()}


def render_user_data(node: NodeBootstrap) -> str:
    """The complete #cloud-config text for this role; equal input gives equal output."""
    enabled = [u for u in _units(node) if u.endswith(".timer") or not _started_by_timer(u, node)]
    template = jinja2.Environment(
        loader=jinja2.FileSystemLoader(CLOUD_INIT),
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    ).get_template("user-data.yaml.j2")
    return template.render(
        node=node,
        files=[_entry(f) for f in node_files(node)],
        entry=ENTRY,
        enabled=[] if node.local else enabled,
        indent=_indent,
    )


def _started_by_timer(unit: str, node: NodeBootstrap) -> bool:
    return unit.endswith(".service") and unit.removesuffix(".service") + ".timer" in _units(node)


def _indent(text: str, spaces: int) -> str:
    pad = " " * spaces
    return "".join(pad + line if line.strip() else line for line in text.splitlines(keepends=True))
