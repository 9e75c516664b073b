"""What each node is told, decided in the plan: the exact command, ranks per node, its role's tags, the fabric's
NCCL environment (the health gate's config: tests/plan/test_plan_health.py)."""

from __future__ import annotations

from fleet.stacks import spec_and_plan
from plan import catalog
from plan.fabric import plan_fabric
from plan.paths import PROJECT_ROOT
from spec.stackfile import load_stack_file


def shipped(name: str):
    return spec_and_plan(load_stack_file(PROJECT_ROOT / "stacks" / f"Pulumi.{name}.yaml"))[1]


def test_the_exact_command_of_each_role():
    plan = shipped("aws-p5")
    common = ("--rdzv-backend=c10d", "--rdzv-endpoint={head_address}:29400", "--rdzv-id=aws-p5")
    tail = ("--max-restarts=100", "--local-addr={local_addr}", "-m", "health.run_job", "--global-batch=1024",
            "--model=gpt2", "--peak-tflops=989", "--checkpoint-dir", "{checkpoint_dir}",
            "--run-dir", "{checkpoint_dir}/runs/{node_id}", "--keep-dir", "{keep_dir}")
    timings = "last_call_timeout=5,keep_alive_interval=1,keep_alive_max_attempt=3"
    assert plan.head.command == ("torchrun", "--nnodes=2:8", "--nproc-per-node=8", *common,
                                 f"--rdzv-conf=is_host=1,{timings}", *tail)
    assert plan.worker.command == ("torchrun", "--nnodes=2:8", "--nproc-per-node=8", *common,
                                   f"--rdzv-conf=is_host=0,{timings}", *tail)
    assert "GF_COMMAND=('torchrun' '--nnodes=2:8'" in plan.worker.user_data


def test_ranks_per_node_one_per_gpu_two_on_cpu_or_as_the_stack_says(write_stack, aws_cluster):
    assert shipped("aws-p5").ranks_per_node == 8
    assert shipped("local").ranks_per_node == 2
    aws_cluster["ranksPerNode"] = 4
    plan = spec_and_plan(load_stack_file(write_stack(aws_cluster)))[1]
    assert plan.ranks_per_node == 4 and "--nproc-per-node=4" in plan.worker.command


def test_the_stacks_peak_figure_wins_over_the_catalogs(write_stack, aws_cluster):
    for key in ("peakTflops", "peak_tflops"):
        aws_cluster["job"] = {**aws_cluster["job"], key: 700}
        plan = spec_and_plan(load_stack_file(write_stack(aws_cluster)))[1]
        assert [a for a in plan.head.command if a.startswith("--peak-tflops")] == ["--peak-tflops=700.0"], key
        del aws_cluster["job"][key]
    assert not [a for a in shipped("local").head.command if a.startswith("--peak-tflops")], "no GPU, no peak"


def test_each_role_is_tagged_with_its_role():
    plan = shipped("aws-p5")
    assert plan.head.tag_map == {**plan.tag_map, "gpufleet:role": "head"}
    assert plan.worker.tag_map == {**plan.tag_map, "gpufleet:role": "worker"}
    assert "gpufleet:role" not in plan.tag_map


def test_efa_nccl_environment():
    """aws-ofi-nccl >= 1.7 needs nothing but huge pages off (fork ENOMEM) and the sockets off lo and docker; NCCL_NET
    holds NCCL to the plugin (no fallback to sockets)."""
    fabric = plan_fabric("auto", catalog.lookup("aws", "p5.48xlarge"))
    assert dict(fabric.nccl_env) == {"NCCL_DEBUG": "WARN", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
                                     "NCCL_SOCKET_IFNAME": "^lo,docker", "FI_EFA_USE_HUGE_PAGE": "0",
                                     "NCCL_NET": "OFI"}


def test_erdma_and_hcc_rdma_nccl_environment():
    erdma = dict(plan_fabric("auto", catalog.lookup("alicloud", "ecs.ebmgn7ex.32xlarge")).nccl_env)
    assert {k: erdma[k] for k in ("NCCL_IB_GID_INDEX", "NCCL_IB_HCA", "NCCL_IB_QPS_PER_CONNECTION",
                                  "NCCL_NET_PLUGIN", "NCCL_SOCKET_IFNAME")} == {
        "NCCL_IB_GID_INDEX": "1", "NCCL_IB_HCA": "erdma", "NCCL_IB_QPS_PER_CONNECTION": "8",
        "NCCL_NET_PLUGIN": "none", "NCCL_SOCKET_IFNAME": "eth0"}
    rdma = dict(plan_fabric("auto", catalog.lookup("tencentcloud", "HCCPNV4h.48XLARGE1536")).nccl_env)
    assert (rdma["NCCL_IB_GID_INDEX"], rdma["NCCL_IB_DISABLE"]) == ("3", "0")
    assert erdma["NCCL_NET"] == rdma["NCCL_NET"] == "IB", "verbs only, no fallback to sockets"


def test_local_nodes_pin_nccl_and_gloo_to_their_own_interface():
    env = dict(shipped("local").fabric.nccl_env)
    assert (env["NCCL_SOCKET_IFNAME"], env["GLOO_SOCKET_IFNAME"]) == ("eth0", "eth0")
