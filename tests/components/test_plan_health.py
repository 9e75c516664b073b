"""/etc/gpufleet/health.json, decided in the plan: every node of every cloud gets its instance type's catalog row and
the gate's level (the stack's `gate`, light unless it says deep), which the node gate and the acceptance read."""

from __future__ import annotations

import json

import pytest
import yaml
from spec_cases import CLOUDS, FIVE_LINES, only, plan_of

from components import catalog


def health_files(plan) -> list[dict]:
    """The health.json each role's user-data writes, parsed."""
    found = []
    for role in (plan.head, plan.worker):
        files = yaml.safe_load(role.user_data)["write_files"]
        found += [json.loads(f["content"]) for f in files if f["path"] == "/etc/gpufleet/health.json"]
    return found


@pytest.mark.parametrize("cloud", CLOUDS)
def test_every_role_of_a_five_line_stack_gets_its_row_and_the_light_gate(tmp_path, cloud):
    spec, plan = plan_of(tmp_path, cloud)
    files = health_files(plan)
    assert len(files) == 2, "head and worker"
    row = catalog.lookup(cloud, FIVE_LINES[cloud][1]["instanceType"])
    for config in files:
        assert (config["level"], config["dcgmLevel"]) == ("light", 1)
        assert config["row"]["name"] == row.name and config["row"]["gpus"] == row.gpus
        assert config["row"]["busbwBaselineGbs"] == row.busbw_baseline_gbs
        assert "sources" not in config["row"], "provenance stays in the catalog"


def test_gate_deep_asks_for_the_deep_checks_and_dcgm_level_2(tmp_path):
    _, plan = plan_of(tmp_path, "aws", {"gate": "deep"})
    assert {(c["level"], c["dcgmLevel"]) for c in health_files(plan)} == {("deep", 2)}


def test_an_h200_node_is_held_to_its_measured_figures(tmp_path):
    _, plan = plan_of(tmp_path, "aws", {"instanceType": "p5en.48xlarge"})
    row = health_files(plan)[0]["row"]
    assert (row["measuredMatmulTflops"], row["measuredHbmGbs"]) == (674.4, 4244)


def test_a_gate_that_is_not_light_or_deep_names_the_field_and_the_choices(tmp_path):
    problem = only(tmp_path, "aws", {"gate": "heavy"})
    assert problem.path.endswith("gate") and "light" in problem.message and "deep" in problem.message


def test_the_old_bus_bandwidth_setting_is_gone(tmp_path):
    _, plan = plan_of(tmp_path, "aws", {"instanceType": "p5.48xlarge"})
    assert all("GF_BUSBW_MIN" not in role.user_data for role in (plan.head, plan.worker))
