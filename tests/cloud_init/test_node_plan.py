"""The node contract (plan/node.py) as the node reads it: bash sources every shipped case's node.env and
finds every field of the role's NodePlan, each once, as the contract says it is written; node.json holds the same
fields under the same names; the gate's reader takes what it judges from node.json; and a field added to the
dataclass reaches both files and user-data with no other change."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path

import pytest
import yaml
from node_cases import CASES, plan_of

from plan.bootstrap import render_user_data
from plan.node import NodePlan
from plan.paths import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "cloud-init"))

from health import config

# Prints every GF_ variable as NAME, element count, elements (NUL-separated): scalars are one element.
DUMP = ('. "$1"; for name in $(compgen -v GF_); do declare -n value="$name"; '
        'printf "%s\\0%s\\0" "$name" "${#value[@]}"; [ "${#value[@]}" = 0 ] || printf "%s\\0" "${value[@]}"; '
        'unset -n value; done')


def node_of(case: str) -> NodePlan:
    stack, role = case.rsplit("-", 1)
    return getattr(plan_of(stack), role).node


def files_of(user_data: str) -> dict[str, str]:
    return {f["path"]: f["content"] for f in yaml.safe_load(user_data)["write_files"]}


def sourced(env_text: str, tmp_path: Path) -> dict[str, list[str]]:
    """The GF_ variables bash has after sourcing the file, each as its elements."""
    path = tmp_path / "node.env"
    path.write_text(env_text)
    out = subprocess.run(["env", "-i", "bash", "-c", DUMP, "_", str(path)], capture_output=True, text=True,
                         check=True).stdout.split("\0")
    found, at = {}, 0
    while at < len(out) - 1:
        name, count = out[at], int(out[at + 1])
        found[name] = out[at + 2:at + 2 + count]
        at += 2 + count
    return found


def shell_form(value: object) -> list[str]:
    """A value as the contract writes it for bash: flags 1/0, None empty, tuples as arrays, pairs as KEY=value."""
    if isinstance(value, bool):
        return ["1" if value else "0"]
    if value is None:
        return [""]
    if isinstance(value, tuple):
        return ["=".join(item) if isinstance(item, tuple) else str(item) for item in value]
    return [str(value)]


def expected(section: object, prefix: str = "GF_") -> dict[str, list[str]]:
    out = {}
    for field in fields(section):
        value = getattr(section, field.name)
        name = prefix + field.name.upper()
        out |= expected(value, name + "_") if is_dataclass(value) else {name: shell_form(value)}
    return out


def same_fields(plan: object, data: object) -> None:
    """node.json holds the plan: each field under its own name, sections as objects, tuples as lists."""
    if is_dataclass(plan):
        assert isinstance(data, dict) and list(data) == [f.name for f in fields(plan)], (plan, data)
        for field in fields(plan):
            same_fields(getattr(plan, field.name), data[field.name])
    elif isinstance(plan, tuple):
        assert isinstance(data, list) and len(data) == len(plan), (plan, data)
        for item, element in zip(plan, data, strict=True):
            same_fields(item, element)
    else:
        assert data == plan and type(data) is type(plan), (plan, data)


@pytest.mark.parametrize("case", CASES)
def test_bash_finds_every_field_of_the_node_plan_in_node_env(case, tmp_path):
    node = node_of(case)
    found = sourced(files_of(getattr(plan_of(case.rsplit("-", 1)[0]), node.role).user_data)["/etc/gpufleet/node.env"],
                    tmp_path)
    assert found == expected(node)


@pytest.mark.parametrize("case", CASES)
def test_node_json_is_the_node_plan_and_the_gate_reads_its_expectations_there(case):
    node = node_of(case)
    text = files_of(getattr(plan_of(case.rsplit("-", 1)[0]), node.role).user_data)["/etc/gpufleet/node.json"]
    same_fields(node, json.loads(text))
    gate = config.parse(Path("node.json"), json.loads(text))
    assert (gate.gpus, gate.nvswitch, gate.fabric.kind, gate.fabric.devices) == (
        node.gpus, node.nvswitch, node.fabric, node.fabric_devices)
    assert (gate.fabric.nccl_net, gate.fabric.nccl_network) == (dict(node.nccl_env)["NCCL_NET"],
                                                                node.health.nccl_network)
    assert (gate.level, gate.dcgm_level) == (node.health.level, node.health.dcgm_level)
    assert [getattr(gate.limits, f.name) for f in fields(gate.limits)] == [
        getattr(node.health.thresholds, f.name) for f in fields(node.health.thresholds)]


def test_a_field_added_to_the_node_plan_reaches_both_files(tmp_path):
    """What a new stack field that reaches the node costs here: the dataclass field, nothing in the renderer."""

    @dataclass(frozen=True)
    class Wider(NodePlan):
        throwaway: int = 0

    node = node_of("aws-p5-worker")
    wider = Wider(**{f.name: getattr(node, f.name) for f in fields(node)}, throwaway=7)
    files = files_of(render_user_data(wider))
    assert sourced(files["/etc/gpufleet/node.env"], tmp_path)["GF_THROWAWAY"] == ["7"]
    assert json.loads(files["/etc/gpufleet/node.json"])["throwaway"] == 7
