"""Per-role user-data: the plan fills a NodeBootstrap and `components.bootstrap` renders it."""

from __future__ import annotations

from components.bootstrap import NodeBootstrap, render_user_data
from components.catalog import InstanceType
from components.clouds.base import CloudProfile
from components.plan.model import FabricPlan, ImagePlan, NetworkPlan, StoragePlan
from components.spec import ClusterSpec

# Pinned driver matrix: what plain images install and what deep-learning images must match.
DRIVER_VERSION = "570.133.20"
CUDA_VERSION = "12.8"
# A node joins only if its all-reduce reaches this share of the catalog's baseline bus bandwidth.
HEALTH_GATE_FRACTION = 0.7
PROMETHEUS_PORT = 9090
GRAFANA_PORT = 3000
CHECKPOINT_DIR = "/var/lib/gpufleet/checkpoints"
# What the bundled job imports, pinned as pyproject's `train` extra pins it; nodes install it into their own venv.
JOB_PACKAGES = ("torch==2.13.0", "numpy>=1.26", "rich>=13")


def gate_threshold(row: InstanceType) -> float:
    """Bus bandwidth (GB/s) a healthy node must reach; 0 skips the check (one GPU, or no baseline)."""
    if row.gpus < 2 or row.busbw_baseline_gbs is None:
        return 0.0
    return round(row.busbw_baseline_gbs * HEALTH_GATE_FRACTION, 1)


def role_user_data(spec: ClusterSpec, cloud: CloudProfile, row: InstanceType, *, role: str, name: str,
                   fabric: FabricPlan, network: NetworkPlan, storage: StoragePlan, image: ImagePlan, nproc: int,
                   spot: bool, job: tuple[str, ...], metrics_ports: tuple[int, int]) -> str:
    node = NodeBootstrap(
        cluster=name, cloud=spec.cloud, region=spec.region, role=role, instance_type=row.name, gpus=row.gpus,
        gpu_model=row.gpu_model, nvswitch=row.nvswitch, fabric=fabric.kind, fabric_devices=fabric.devices,
        mtu=network.mtu, nccl_env=fabric.nccl_env, port_range=spec.network.port_range,
        head_address=network.head_address, rendezvous_port=spec.network.rendezvous_port,
        nnodes_min=spec.counts.min, nnodes_max=spec.counts.max, nproc_per_node=nproc, job_args=job,
        checkpoint_dir=CHECKPOINT_DIR, checkpoint_uri=storage.checkpoint_uri, code_uri=storage.code_uri,
        code_sha256=storage.code_sha256, spot=spot, spot_notice_url=cloud.spot_notice_url,
        metadata_url=cloud.metadata_url, imds_token_url=cloud.imds_token_url,
        imds_token_header=cloud.imds_token_header, busbw_min_gbps=gate_threshold(row), driver_version=DRIVER_VERSION,
        cuda_version=CUDA_VERSION, plain_image=not image.has_drivers, metrics_ports=metrics_ports,
        prometheus_port=PROMETHEUS_PORT, grafana_port=GRAFANA_PORT, local=spec.cloud == "local",
        pip_packages=() if spec.cloud == "local" else JOB_PACKAGES,
    )
    return render_user_data(node)
