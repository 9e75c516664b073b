"""What each role's nodes are told (the node plan, plan.node, which `plan.bootstrap` renders as
their user-data) and the command they run: every node setting is decided here."""

from __future__ import annotations

from dataclasses import dataclass

from plan.catalog import InstanceType
from plan.health import plan_health
from plan.identity import metric_namespace
from plan.matrix import image_matrix
from plan.mirrors import rehomed
from plan.model import HEAD, WORKER, FabricPlan, LifecyclePlan, MarketPlan, NetworkPlan, StoragePlan
from plan.node import NodePlan, SoftwarePlan
from plan.profile import CloudProfile
from plan.software import FAILURE_BUDGET, PERMANENT_FAILURES, TORCH, failure_records
from spec.cluster import ClusterSpec

PROMETHEUS_PORT = 9090
GRAFANA_PORT = 3000
METRICS_PORTS = (9100, 9400)  # node exporter, DCGM exporter
CHECKPOINT_DIR = "/var/lib/gpufleet/checkpoints"
# What the bundled job imports, pinned as pyproject's `train` extra pins it; nodes install it into their own venv.
JOB_PACKAGES = (TORCH, "numpy>=1.26", "rich>=13")
# torchrun's restart budget: every re-formed rendezvous (a node lost, a spot exit, a node joining) spends one.
MAX_RESTARTS = 100
# torchrun's c10d rendezvous (docs/cloud-facts.md#torch-rendezvous), set to re-form in seconds (benchmarks/RECOVERY.md):
# an agent whose keep-alive is RDZV_KEEP_ALIVE_S x RDZV_KEEP_ALIVE_TRIES old is dropped from the round (torch's 5 x 3);
# once the fewest nodes joined, the round waits RDZV_LAST_CALL_S for more (torch's 30 s). The last call only has to
# cover the spread of the surviving agents' arrival (each stops its workers first); a node later than that is not
# lost, it waits for the next round and the job re-forms once more with it (no step lost: training.recovery).
RDZV_KEEP_ALIVE_S = 1
RDZV_KEEP_ALIVE_TRIES = 3
RDZV_LAST_CALL_S = 5
SPOT_POLL_S = 5  # poll the notice every 5 s (docs/cloud-facts.md#aws-spot)
SPOT_GRACE_S = 90  # the shortest notice is 120 s (docs/cloud-facts.md#aws-spot): time to push the checkpoint
# How often a node pushes its checkpoints to the bucket besides the push at the job's end and at a spot notice.
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
IMAGES = {
    "dcgm_exporter": "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04",
    "prometheus": "prom/prometheus:v3.5.0",
    "grafana": "grafana/grafana-oss:11.6.0",
}
# What the monitor installs with apt where the image lacks it: Docker for its containers (an image's own Docker, a DL
# image's, serves as well), the node exporter. A baked image holds them, and every role's images, pulled at the bake.
MONITOR_PACKAGES = ("docker.io", "prometheus-node-exporter")


@dataclass(frozen=True)
class Job:
    """What every node's command shares: the rendezvous and the training job's settings."""

    name: str
    nnodes: tuple[int, int]
    ranks_per_node: int
    rendezvous_port: int
    job_args: tuple[str, ...]


def node_command(job: Job, role: str) -> tuple[str, ...]:
    """The exact argv a node of this role runs (gpufleet-train fills the {slots}): torchrun joining the c10d
    rendezvous on the head, which hosts its store, then the training job. The node's own directories come last, since
    the last of a repeated flag wins; metrics go in one folder per node beside the checkpoints, so they reach the
    bucket with them, and each rank keeps its last step's state in the node's tmpfs ({keep_dir})."""
    low, high = job.nnodes
    return ("torchrun", f"--nnodes={low}:{high}", f"--nproc-per-node={job.ranks_per_node}", "--rdzv-backend=c10d",
            f"--rdzv-endpoint={{head_address}}:{job.rendezvous_port}", f"--rdzv-id={job.name}",
            f"--rdzv-conf=is_host={int(role == HEAD)},last_call_timeout={RDZV_LAST_CALL_S},"
            f"keep_alive_interval={RDZV_KEEP_ALIVE_S},keep_alive_max_attempt={RDZV_KEEP_ALIVE_TRIES}",
            f"--max-restarts={MAX_RESTARTS}", "--local-addr={local_addr}",
            "-m", "health.run_job", *job.job_args, "--checkpoint-dir", "{checkpoint_dir}",
            "--run-dir", "{checkpoint_dir}/runs/{node_id}", "--keep-dir", "{keep_dir}")


def plan_node(spec: ClusterSpec, cloud: CloudProfile, row: InstanceType, role: str, *, name: str, job: Job,
              fabric: FabricPlan, network: NetworkPlan, storage: StoragePlan, software: SoftwarePlan,
              market: MarketPlan, lifecycle: LifecyclePlan, in_scaling_group: bool) -> NodePlan:
    """Everything a node of this role is told, decided from the stack and the rest of the plan."""
    worker = role == WORKER
    pip_packages = () if cloud.runs_here else JOB_PACKAGES
    tools = (STORE_CLIENT, *cloud.api_client)
    dcgm_exporter_image = rehomed(IMAGES["dcgm_exporter"], spec.network.nvcr_mirror)
    # Every role's images, not this role's: one baked image serves the head and the workers. Local nodes start none.
    monitor_packages = () if cloud.runs_here else MONITOR_PACKAGES
    monitor_images = () if cloud.runs_here else (
        *((dcgm_exporter_image,) if row.gpus else ()), IMAGES["prometheus"], IMAGES["grafana"])
    return NodePlan(
        cluster=name, cloud=cloud.name, region=spec.region, role=role, instance_type=row.name, gpus=row.gpus,
        nvswitch=row.nvswitch, fabric=fabric.kind, fabric_devices=fabric.devices, mtu=network.mtu,
        nccl_env=fabric.nccl_env, port_range=spec.network.port_range, head_address=network.head_address,
        rendezvous_port=job.rendezvous_port, command=node_command(job, role), checkpoint_dir=CHECKPOINT_DIR,
        checkpoint_uri=storage.checkpoint_uri, ckpt_sync_s=CKPT_SYNC_S, code_uri=storage.code_uri,
        code_sha256=storage.code_sha256, bundle_fetch_tries=BUNDLE_FETCH_TRIES, bundle_fetch_wait_s=BUNDLE_FETCH_WAIT_S,
        spot=worker and market.uses_spot,
        # Workers are the group's to take away: each one completes the group's termination hook once it checkpointed.
        drain_hook=lifecycle.drain.hook if worker and lifecycle.drain else "",
        launch_hook=lifecycle.launch_hook.hook if worker and lifecycle.launch_hook else "",
        spot_notice_url=cloud.spot_notice_url, spot_poll_s=SPOT_POLL_S, spot_grace_s=SPOT_GRACE_S,
        # Where the workers scale on GPU utilisation, every node (head and workers) writes the cluster's one series.
        gpu_metric_namespace=metric_namespace(name) if spec.autoscaling.gpu_util_target is not None else "",
        metadata_url=cloud.metadata_url, imds_token_url=cloud.imds_token_url,
        imds_token_header=cloud.imds_token_header, software=software, permanent_failures=PERMANENT_FAILURES,
        failure_budget=FAILURE_BUDGET, failure_uri=failure_records(storage.checkpoint_uri),
        node_exporter_port=METRICS_PORTS[0], dcgm_exporter_port=METRICS_PORTS[1], prometheus_port=PROMETHEUS_PORT,
        grafana_port=GRAFANA_PORT, dcgm_exporter_image=dcgm_exporter_image,
        prometheus_image=IMAGES["prometheus"], grafana_image=IMAGES["grafana"],
        monitor_packages=monitor_packages, monitor_images=monitor_images,
        mirrors=network.mirrors, image_pull_timeout_s=IMAGE_PULL_TIMEOUT_S, pip_packages=pip_packages, tools=tools,
        image_matrix=image_matrix(software, pip_packages, tools, monitor_packages, monitor_images),
        in_scaling_group=in_scaling_group, local=cloud.runs_here, health=plan_health(row, fabric, spec.gate))
