"""Per-role user-data and the command its nodes run: the plan fills a NodeBootstrap, `components.bootstrap`
renders it."""

from __future__ import annotations

from dataclasses import dataclass

from components.bootstrap import NodeBootstrap, render_user_data
from components.catalog import InstanceType
from components.clouds.base import CloudProfile
from components.plan.health import GateLevel, health_config
from components.plan.model import HEAD, FabricPlan, ImagePlan, NetworkPlan, SoftwarePlan, StoragePlan
from components.plan.software import FAILURE_BUDGET, PERMANENT_FAILURES, TORCH, failure_records

PROMETHEUS_PORT = 9090
GRAFANA_PORT = 3000
METRICS_PORTS = (9100, 9400)  # node exporter, DCGM exporter
CHECKPOINT_DIR = "/var/lib/gpufleet/checkpoints"
# What the bundled job imports, pinned as pyproject's `train` extra pins it; nodes install it into their own venv.
JOB_PACKAGES = (TORCH, "numpy>=1.26", "rich>=13")
# torchrun's restart budget: every re-formed rendezvous (a node lost, a spot exit, a node joining) spends one.
MAX_RESTARTS = 100


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
    bucket with them."""
    low, high = job.nnodes
    return ("torchrun", f"--nnodes={low}:{high}", f"--nproc-per-node={job.ranks_per_node}", "--rdzv-backend=c10d",
            f"--rdzv-endpoint={{head_address}}:{job.rendezvous_port}", f"--rdzv-id={job.name}",
            f"--rdzv-conf=is_host={int(role == HEAD)}", f"--max-restarts={MAX_RESTARTS}", "--local-addr={local_addr}",
            "-m", "health.run_job", *job.job_args, "--checkpoint-dir", "{checkpoint_dir}",
            "--run-dir", "{checkpoint_dir}/runs/{node_id}")


def role_user_data(cloud: CloudProfile, row: InstanceType, *, role: str, name: str, region: str,
                   command: tuple[str, ...], rendezvous_port: int, fabric: FabricPlan, network: NetworkPlan,
                   storage: StoragePlan, image: ImagePlan, software: SoftwarePlan,
                   port_range: tuple[int, int] | None, spot: bool, drain_hook: str, gpu_metric: bool,
                   gate: GateLevel, in_scaling_group: bool) -> str:
    node = NodeBootstrap(
        cluster=name, cloud=cloud.name, region=region, role=role, instance_type=row.name, gpus=row.gpus,
        nvswitch=row.nvswitch, fabric=fabric.kind, fabric_devices=fabric.devices,
        mtu=network.mtu, nccl_env=fabric.nccl_env, port_range=port_range, head_address=network.head_address,
        rendezvous_port=rendezvous_port, command=command, checkpoint_dir=CHECKPOINT_DIR,
        checkpoint_uri=storage.checkpoint_uri, code_uri=storage.code_uri, code_sha256=storage.code_sha256, spot=spot,
        drain_hook=drain_hook, gpu_metric=gpu_metric, spot_notice_url=cloud.spot_notice_url,
        metadata_url=cloud.metadata_url,
        imds_token_url=cloud.imds_token_url, health_config=health_config(row, fabric, gate),
        imds_token_header=cloud.imds_token_header, api_client=cloud.api_client, in_scaling_group=in_scaling_group,
        registry_mirror=network.registry_mirror,
        driver_version=software.driver,
        cuda_version=software.cuda, driver_min_branch=software.driver_min_branch,
        software_json="" if cloud.runs_here else software.to_json(), plain_image=not image.has_drivers,
        metrics_ports=METRICS_PORTS,
        prometheus_port=PROMETHEUS_PORT, grafana_port=GRAFANA_PORT, local=cloud.runs_here,
        pip_packages=() if cloud.runs_here else JOB_PACKAGES, permanent_failures=PERMANENT_FAILURES,
        failure_budget=FAILURE_BUDGET, failure_uri=failure_records(storage.checkpoint_uri),
    )
    return render_user_data(node)
