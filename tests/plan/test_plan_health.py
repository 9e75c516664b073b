"""The gate's expectations, decided in the plan from the values that configure what the gate checks and written into
every node's node.json: every node of every cloud gets its type's GPU count, the plan's fabric with the NCCL_NET its
nccl.env exports and the network name NCCL logs for it, absolute thresholds (numbers, never catalog field names) and
the gate's level."""

from __future__ import annotations

import json
import shlex

import pytest
import yaml
from spec_cases import CLOUDS, FIVE_LINES, only, plan_of

from plan import catalog


def node_files(plan) -> list[tuple[dict, dict[str, str]]]:
    """(node.json, nccl.env as KEY -> value) each role's user-data writes."""
    found = []
    for role in (plan.head, plan.worker):
        files = {f["path"]: f["content"] for f in yaml.safe_load(role.user_data)["write_files"]}
        env = dict(line.split("=", 1) for line in files["/etc/gpufleet/nccl.env"].splitlines()
                   if line and not line.startswith("#"))
        found.append((json.loads(files["/etc/gpufleet/node.json"]),
                      {key: " ".join(shlex.split(value)) for key, value in env.items()}))
    return found


def health_files(plan) -> list[dict]:
    return [config["health"] for config, _ in node_files(plan)]


@pytest.mark.parametrize("cloud", CLOUDS)
def test_every_role_of_a_five_line_stack_is_held_to_its_plan(tmp_path, cloud):
    _, plan = plan_of(tmp_path, cloud)
    files = node_files(plan)
    assert len(files) == 2, "head and worker"
    row = catalog.lookup(cloud, FIVE_LINES[cloud][1]["instanceType"])
    for config, env in files:
        health = config["health"]
        assert set(health) == {"level", "dcgm_level", "nccl_network", "thresholds"}, "no catalog row"
        assert (health["level"], health["dcgm_level"]) == ("light", 1)
        assert (config["gpus"], config["nvswitch"]) == (row.gpus, row.nvswitch)
        assert (config["fabric"], config["fabric_devices"]) == (plan.fabric.kind, plan.fabric.devices)
        assert dict(config["nccl_env"])["NCCL_NET"] == env["NCCL_NET"], "the NCCL_NET the node's nccl.env exports"
        assert set(health["thresholds"]) == {"matmul_tflops", "hbm_gbs", "p2p_gbs", "allreduce_busbw_gbs",
                                             "cross_node_busbw_gbs"}


def test_gate_deep_asks_for_the_deep_checks_and_dcgm_level_2(tmp_path):
    _, plan = plan_of(tmp_path, "aws", {"gate": "deep"})
    assert {(c["level"], c["dcgm_level"]) for c in health_files(plan)} == {("deep", 2)}


def test_an_h200_node_is_held_to_its_measured_figures(tmp_path):
    """The catalog's measured 674.4 TFLOP/s and 4244 GB/s x TOLERANCE 0.8, its 480 GB/s baseline x 0.7."""
    _, plan = plan_of(tmp_path, "aws", {"instanceType": "p5en.48xlarge"})
    found = health_files(plan)[0]["thresholds"]
    assert found == {"matmul_tflops": 539.52, "hbm_gbs": 3395.2, "p2p_gbs": None, "allreduce_busbw_gbs": 336.0,
                     "cross_node_busbw_gbs": None}


def test_an_efa_type_run_over_tcp_is_judged_by_the_plans_fabric_not_the_catalogs(tmp_path):
    _, plan = plan_of(tmp_path, "aws", {"instanceType": "p5.48xlarge", "network": {"fabric": "tcp"}})
    assert catalog.lookup("aws", "p5.48xlarge").fabric == "efa"
    for config, env in node_files(plan):
        assert (config["fabric"], config["fabric_devices"], config["health"]["nccl_network"]) == ("tcp", 0, "Socket")
        assert env["NCCL_NET"] == dict(config["nccl_env"])["NCCL_NET"] == "Socket" and config["gpus"] == 8


def test_a_gate_that_is_not_light_or_deep_names_the_field_and_the_choices(tmp_path):
    problem = only(tmp_path, "aws", {"gate": "heavy"})
    assert problem.path.endswith("gate") and "light" in problem.message and "deep" in problem.message


def test_the_old_bus_bandwidth_setting_is_gone(tmp_path):
    _, plan = plan_of(tmp_path, "aws", {"instanceType": "p5.48xlarge"})
    assert all("GF_BUSBW_MIN" not in role.user_data for role in (plan.head, plan.worker))
