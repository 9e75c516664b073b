"""The software matrix per image: the CUDA the pinned torch wheel needs comes from the wheel's own metadata (its
Requires-Dist on PyPI, PEP 658), and every shipped stack's driver is one NVIDIA's table (docs/cloud-facts.md, read
from the doc itself) allows for that CUDA; DL images are checked against the minimum, plain images install the pin;
the fabric names the one network NCCL may use."""

from __future__ import annotations

import json
import re
import sys
import urllib.request
from email.parser import Parser

import pytest
from packaging.requirements import Requirement

from fleet.stacks import spec_and_plan
from here.local.cloudconfig import document
from plan import software
from plan.model import ClusterPlan
from plan.paths import PROJECT_ROOT
from spec.stackfile import load_stack_file, stack_name_of

# The clouds' stacks: the local one runs on the host's Python and has no matrix.
STACKS = sorted({stack_name_of(p) for p in (PROJECT_ROOT / "stacks").glob("Pulumi.*.yaml")} - {"local"})

LINUX = {"platform_system": "Linux", "sys_platform": "linux", "python_version": "3.11", "extra": ""}
CUDA_SUFFIX = re.compile(r"-cu(\d+)$")


def plan_of(stack: str) -> ClusterPlan:
    return spec_and_plan(load_stack_file(PROJECT_ROOT / "stacks" / f"Pulumi.{stack}.yaml"))[1]


def _wheel_requirements(pin: str) -> list[Requirement]:
    """Requires-Dist of the wheel pip resolves for `pin` on Linux x86_64 and this Python, from PyPI's metadata file."""
    name, version = pin.split("==")
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    request = urllib.request.Request(f"https://pypi.org/simple/{name}/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        files = json.load(urllib.request.urlopen(request, timeout=60))["files"]
        wheel = next(f for f in files if f["filename"] == f"{name}-{version}-{tag}-{tag}-manylinux_2_28_x86_64.whl")
        metadata = urllib.request.urlopen(wheel["url"] + ".metadata", timeout=60).read().decode()
    except OSError as error:
        pytest.skip(f"PyPI is not reachable from here: {error}")
    requirements = [Requirement(line) for line in Parser().parsestr(metadata).get_all("Requires-Dist")]
    return [r for r in requirements if r.marker is None or r.marker.evaluate(LINUX)]


def _pinned(requirement: Requirement) -> str:
    (spec,) = requirement.specifier
    assert spec.operator == "==", requirement
    return spec.version


@pytest.fixture(scope="module")
def wheel() -> dict[str, str]:
    """The pinned torch wheel's CUDA (major.minor) and NCCL, as its metadata declares them."""
    requirements = _wheel_requirements(software.TORCH)
    toolkit = next(r for r in requirements if r.name == "cuda-toolkit")
    cuda = ".".join(_pinned(toolkit).split(".")[:2])
    majors = {int(m.group(1)) for r in requirements if (m := CUDA_SUFFIX.search(r.name))}
    assert majors == {software.cuda_major(cuda)}, f"the wheel's nvidia-*-cuNN packages disagree: {majors} vs {cuda}"
    nccl = next(r for r in requirements if r.name.startswith("nvidia-nccl-cu"))
    return {"cuda": cuda, "nccl": _pinned(nccl)}


def _doc_table() -> dict[int, int]:
    """NVIDIA's table as docs/cloud-facts.md#cuda-driver-table holds it: CUDA major -> minimum driver branch."""
    text = (PROJECT_ROOT / "docs/cloud-facts.md").read_text()
    section = text.split("### CUDA driver table\n", 1)[1].split("\n### ", 1)[0]
    return {int(major): int(branch) for major, branch in re.findall(r"^\| (\d+)\.x \| (\d+) \|", section, re.M)}


def test_the_matrix_names_the_cuda_and_nccl_the_wheel_brings(wheel):
    assert wheel["cuda"] == software.TORCH_CUDA
    assert wheel["nccl"] == software.TORCH_NCCL


def test_the_plans_table_is_nvidias_as_documented():
    assert _doc_table() == software.CUDA_MIN_DRIVER_BRANCH


@pytest.mark.parametrize("stack", STACKS)
def test_every_shipped_stack_runs_a_driver_the_wheel_can_use(stack, wheel):
    plan = plan_of(stack)
    sw = plan.software
    need = _doc_table()[software.cuda_major(wheel["cuda"])]
    if plan.image.has_drivers:
        assert (sw.mode, sw.driver) == ("check", ""), "a DL image keeps its own driver"
        assert sw.driver_min_branch >= need
    else:
        assert sw.mode == "install"
        assert int(sw.driver.split(".")[0]) >= need, f"{sw.driver} cannot run CUDA {wheel['cuda']}"
    assert sw.torch in plan.worker.user_data and sw.cuda == wheel["cuda"]


def _node_files(user_data: str) -> dict[str, str]:
    return {f["path"]: f["content"] for f in document(user_data)["write_files"]}


def test_the_node_gets_the_matrix_and_its_fabrics_network():
    nets = {"aws-p5": "OFI", "ali-erdma": "IB", "tencent-hcc": "IB", "ali-spot": "Socket", "aws-g4dn-dev": "Socket"}
    for stack, net in nets.items():
        plan = plan_of(stack)
        files = _node_files(plan.worker.user_data)
        assert json.loads(files["/etc/gpufleet/node.json"])["software"] == json.loads(plan.software.to_json())
        assert f"GF_SOFTWARE_MODE='{plan.software.mode}'" in files["/etc/gpufleet/node.env"].splitlines(), stack
        assert f"NCCL_NET={net}" in files["/etc/gpufleet/nccl.env"].splitlines(), stack
        assert plan.software.nccl_net == net
    p5 = plan_of("aws-p5").software
    assert p5.fabricmanager == "= driver" and "aws-ofi-nccl" in p5.fabric_stack
    assert plan_of("aws-g4dn-dev").software.fabricmanager == "", "g4dn has no NVSwitch"


def test_the_stack_outputs_the_matrix_and_where_a_stopped_loop_shows():
    from fleet.preview import run_program
    from fleet.stacks import resolve

    preview = run_program(resolve("aws-g4dn-dev", None))
    outputs = preview.outputs
    assert outputs["software"] == json.loads(preview.plan.software.to_json())
    assert outputs["software"]["mode"] == "check" and outputs["software"]["driver_min_branch"] == 580
    budget = outputs["failureBudget"]
    assert budget["records"] == preview.plan.storage.checkpoint_uri.rsplit("/", 1)[0] + "/failures"
    assert budget["nodes"] == software.FAILURE_BUDGET and "driver" in budget["permanentReasons"]
