"""Representative NodeBootstrap cases, one per scenario the clouds ship; the snapshots are named after them."""

from __future__ import annotations

from dataclasses import replace

from components.bootstrap import NodeBootstrap

SHA = "3f" * 32
AWS_SPOT = "http://169.254.169.254/latest/meta-data/spot/instance-action"
AWS_TOKEN = "http://169.254.169.254/latest/api/token"
EFA_ENV = (("FI_EFA_USE_HUGE_PAGE", "0"), ("NCCL_SOCKET_IFNAME", "^lo,docker"))

P5_HEAD = NodeBootstrap(
    cluster="aws-p5", cloud="aws", region="us-east-1", role="head", instance_type="p5.48xlarge", gpus=8,
    gpu_model="H100", nvswitch=True, fabric="efa", fabric_devices=32, mtu=9001, nccl_env=EFA_ENV, port_range=None,
    head_address="10.42.0.10", rendezvous_port=29400, nnodes_min=2, nnodes_max=16, nproc_per_node=8,
    job_args=("--model", "gpt2-medium", "--steps", "20000", "--batch-size", "32", "--run-name", "it's-p5"),
    checkpoint_dir="/var/lib/gpufleet/checkpoints", checkpoint_uri="s3://gpufleet-aws-p5-ckpt/aws-p5",
    code_uri=f"s3://gpufleet-aws-p5-ckpt/code/{SHA}.tar.gz", code_sha256=SHA, spot=True, spot_notice_url=AWS_SPOT,
    imds_token_url=AWS_TOKEN, busbw_min_gbps=330.0, driver_version="570.133.20", cuda_version="12.8",
    plain_image=False, metrics_ports=(9100, 9400), prometheus_port=9090, grafana_port=3000, local=False,
)

CASES: dict[str, NodeBootstrap] = {
    "aws-p5-head-spot": P5_HEAD,
    "aws-p5-worker-spot": replace(P5_HEAD, role="worker"),
    "aws-p4d-capacity-block": replace(
        P5_HEAD, cluster="aws-p4d", role="worker", instance_type="p4d.24xlarge", gpu_model="A100", fabric_devices=4,
        spot=False, busbw_min_gbps=160.0, checkpoint_uri="s3://gpufleet-aws-p4d-ckpt/aws-p4d",
        code_uri=f"s3://gpufleet-aws-p4d-ckpt/code/{SHA}.tar.gz", job_args=()),
    "aws-g5-tcp-port-range": replace(
        P5_HEAD, cluster="aws-g5", role="worker", instance_type="g5.48xlarge", gpu_model="A10G", nvswitch=False,
        fabric="tcp", fabric_devices=0, nccl_env=(("NCCL_SOCKET_IFNAME", "ens5"),), port_range=(50000, 51000),
        busbw_min_gbps=8.0, spot=False, job_args=("--steps", "500")),
    "aws-g4dn-plain-image": replace(
        P5_HEAD, cluster="aws-g4dn", role="head", instance_type="g4dn.xlarge", gpus=1, gpu_model="T4",
        nvswitch=False, fabric="tcp", fabric_devices=0, nccl_env=(), plain_image=True, busbw_min_gbps=0.0,
        nproc_per_node=1, nnodes_min=1, nnodes_max=2, spot=False, job_args=()),
    "alicloud-ebmgn7ex-erdma": replace(
        P5_HEAD, cluster="ali-a100", cloud="alicloud", region="cn-wulanchabu", role="worker",
        instance_type="ecs.ebmgn7ex.32xlarge", gpu_model="A100", fabric="erdma", fabric_devices=2, mtu=8500,
        nccl_env=(("NCCL_SOCKET_IFNAME", "eth0"), ("NCCL_IB_GID_INDEX", "1"), ("NCCL_IB_HCA", "erdma"),
                  ("NCCL_IB_QPS_PER_CONNECTION", "8"), ("NCCL_NET_PLUGIN", "none")),
        checkpoint_uri="oss://gpufleet-ali-a100/ckpt", code_uri=f"oss://gpufleet-ali-a100/code/{SHA}.tar.gz",
        spot_notice_url="http://100.100.100.200/latest/meta-data/instance/spot/termination-time",
        imds_token_url="", busbw_min_gbps=160.0),
    "tencentcloud-hccpnv4h-rdma": replace(
        P5_HEAD, cluster="tc-a100", cloud="tencentcloud", region="ap-shanghai", role="head",
        instance_type="HCCPNV4h.48XLARGE1536", gpu_model="A100", fabric="rdma", fabric_devices=4, mtu=1500,
        nccl_env=(("NCCL_IB_GID_INDEX", "3"), ("NCCL_SOCKET_IFNAME", "eth0")), spot=False,
        checkpoint_uri="cos://gpufleet-tc-a100-1250000000/ckpt",
        code_uri=f"cos://gpufleet-tc-a100-1250000000/code/{SHA}.tar.gz",
        spot_notice_url="http://metadata.tencentyun.com/latest/meta-data/spot/termination-time", imds_token_url="",
        busbw_min_gbps=160.0),
    "local-head": replace(
        P5_HEAD, cluster="local", cloud="local", region="local", instance_type="local.cpu", gpus=0, gpu_model="",
        nvswitch=False, fabric="tcp", fabric_devices=0, mtu=1500,
        nccl_env=(("GLOO_SOCKET_IFNAME", "eth0"), ("NCCL_SOCKET_IFNAME", "eth0")), port_range=(50000, 51000),
        head_address="10.99.0.10", nnodes_min=2, nnodes_max=2, nproc_per_node=1, job_args=("--steps", "20"),
        checkpoint_uri="file:///var/tmp/gpufleet-local/checkpoints",
        code_uri=f"file:///var/tmp/gpufleet-local/code/{SHA}.tar.gz", spot=True,
        spot_notice_url="http://10.99.0.1:8169/spot", imds_token_url="", busbw_min_gbps=0.0, driver_version="",
        cuda_version="", local=True, scrape_targets=("10.99.0.10", "10.99.0.11")),
}
LARGEST = "aws-p5-head-spot"
