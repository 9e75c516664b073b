"""The software matrix on the node, run for real: `gpufleet-driver` in cloud mode against a stub nvidia-smi and a
stub libnccl.so.2 (the version NCCL's own ncclGetVersion answers) holds a DL image to the minimum driver branch and a
plain image to the exact pin; `gpufleet-nccl` records NCCL's real version and, under a shipped stack's own nccl.env
and node.json with a stand-in for a GPU torch (fake_torch/, whose NCCL prints what nccl_emulation says NCCL
prints), passes the stack's network and fails a node without its transport; `gpufleet-report` spends the group's
failure budget on a permanent reason and stops asking for replacements once it is spent, but never on a reason a new
node may fix."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from bootstrap_helpers import run, tool
from nccl_emulation import NODE_OF_FABRIC, PLAIN, Node
from node_cases import plan_of
from test_local_scripts import local_node  # noqa: F401  (the fixture)

from plan.software import DRIVER_VERSION, FAILURE_BUDGET, TORCH_NCCL

HERE = Path(__file__).resolve().parent
# python3 on the node: the test's own, with the stand-in for a GPU torch after the script's PYTHONPATH.
GPU_PYTHON = f"""#!/bin/sh
PYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{HERE / 'fake_torch'}:{HERE}" exec "{sys.executable}" "$@"
"""

NVIDIA_SMI = """#!/usr/bin/env bash
case "$*" in *driver_version*) echo "$GPUFLEET_TEST_DRIVER" ;; *) echo "stub nvidia-smi" ;; esac
"""


@pytest.fixture
def gpu_node(local_node, tmp_path):  # noqa: F811
    """(root, env, driver_script) for a node in cloud mode whose GPU stack answers with the given driver."""
    if tool("cc") is None:
        pytest.skip("needs a C compiler for the stub libnccl.so.2")
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "nccl.c").write_text("int ncclGetVersion(int *v) { *v = 22907; return 0; }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libnccl.so.2", "-o", str(lib / "libnccl.so.2"),
                    str(lib / "nccl.c")], check=True)

    def boot(driver: str, script: str = "gpufleet-driver", **settings):
        root, _, env, _ = local_node(nvswitch=False, **({"gpus": 1} | settings))  # a GPU node, not the local CPU row
        with open(root / "etc/gpufleet/node.env", "a") as node_env:  # installed as a local node, now run as a cloud's
            node_env.write("GF_LOCAL='0'\n")
        stub = root / "test-bin"
        stub.mkdir(exist_ok=True)
        (stub / "nvidia-smi").write_text(NVIDIA_SMI)
        (stub / "nvidia-smi").chmod(0o755)
        env = env | {"PATH": f"{stub}:{env['PATH']}", "LD_LIBRARY_PATH": str(lib), "GPUFLEET_TEST_DRIVER": driver}
        return root, env, root / "opt/gpufleet/bin" / script

    return boot


def test_a_dl_image_passes_on_a_newer_driver_of_the_branch(gpu_node):
    root, env, driver = gpu_node("595.45.04", software_mode="check", software_driver="", software_driver_min_branch=580)
    result = run([driver], root, env)
    assert result.returncode == 0, result.stderr
    versions = json.loads((root / "var/lib/gpufleet/versions.json").read_text())
    assert versions == {"driver": "595.45.04", "fabricmanager": "", "torch_cuda": ""}, "CPU torch: no CUDA"


def test_the_driver_step_reads_torchs_cuda_without_importing_torch(gpu_node, tmp_path):
    """A torch whose import would fail but whose version file names CUDA 12.8: the step still sees 12.8 (read from
    torch/version.py, not by importing torch) and holds it to the plan's 13.0."""
    fake = tmp_path / "site" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('importing torch is not needed to read its CUDA')\n")
    (fake / "version.py").write_text("from typing import Optional\ncuda: Optional[str] = '12.8'\n")
    root, env, driver = gpu_node("595.45.04", software_mode="check", software_driver="", software_driver_min_branch=580)
    result = run([driver], root, env | {"PYTHONPATH": str(fake.parent)})
    assert result.returncode == 1
    assert (root / "run/gpufleet/failure").read_text() == "torch-cuda:12.8:planned=13.0\n"


def test_gpufleet_nccl_records_the_librarys_own_version(gpu_node):
    root, env, nccl = gpu_node("595.45.04", script="gpufleet-nccl")
    result = run([nccl], root, env)
    assert result.returncode == 0, result.stderr
    recorded = json.loads((root / "var/lib/gpufleet/nccl.json").read_text())
    assert recorded == {"version": "2.29.7", "source": "libnccl.so.2", "network": ""}, "not the SONAME's 2"
    assert "NCCL_NET=Socket holds it to the fabric" in result.stderr
    result = run([nccl], root, env | {"LD_LIBRARY_PATH": ""})
    assert result.returncode == 1 and (root / "run/gpufleet/failure").read_text() == "nccl:not-found\n"


def gpu_torch_node(gpu_node, stack: str, node: Node):
    """A GPU node of ``stack`` (its worker's nccl.env and node.json) whose NCCL runs on ``node``, with the EFA
    plugin's library directory where the stack's fabric is EFA: (root, env, gpufleet-nccl)."""
    root, env, script = gpu_node("595.45.04", script="gpufleet-nccl")
    files = {f["path"]: f["content"] for f in yaml.safe_load(plan_of(stack).worker.user_data)["write_files"]}
    for name in ("nccl.env", "node.json"):
        (root / "etc/gpufleet" / name).write_text(files[f"/etc/gpufleet/{name}"])
    (root / "test-bin/python3").write_text(GPU_PYTHON)
    (root / "test-bin/python3").chmod(0o755)
    env = env | {"GPUFLEET_TEST_NODE": json.dumps(dataclasses.asdict(node)), "GPUFLEET_TEST_TORCH_NCCL": TORCH_NCCL}
    return root, env, script


@pytest.mark.parametrize("stack", ["aws-p5", "ali-erdma", "tencent-hcc", "aws-g5-spot"])
def test_gpufleet_nccl_passes_each_stacks_network_on_its_fabric(gpu_node, stack):
    kind = plan_of(stack).fabric.kind
    root, env, nccl = gpu_torch_node(gpu_node, stack, NODE_OF_FABRIC[kind])
    result = run([nccl], root, env)
    assert result.returncode == 0, result.stderr
    recorded = json.loads((root / "var/lib/gpufleet/nccl.json").read_text())
    network = json.loads((root / "etc/gpufleet/node.json").read_text())["health"]["nccl_network"]
    assert recorded == {"version": TORCH_NCCL, "source": "torch", "network": network}
    assert f"NCCL {TORCH_NCCL} over {network}" in result.stderr


def test_gpufleet_nccl_fails_an_efa_node_without_its_plugin_for_good(gpu_node):
    root, env, nccl = gpu_torch_node(gpu_node, "aws-p5", PLAIN)
    result = run([nccl], root, env)
    assert result.returncode == 1
    assert (root / "run/gpufleet/failure").read_text() == "nccl-net:OFI:unavailable\n"
    recorded = json.loads((root / "var/lib/gpufleet/nccl.json").read_text())
    assert recorded["error"] and recorded["network"] == ""


def test_gpufleet_nccl_refuses_to_probe_outside_the_plans_nccl_env(gpu_node):
    """A NCCL_NET other than node.json's is a setup error, not a pass: nothing is judged."""
    root, env, nccl = gpu_torch_node(gpu_node, "aws-p5", NODE_OF_FABRIC["efa"])
    nccl_env = root / "etc/gpufleet/nccl.env"
    nccl_env.write_text(nccl_env.read_text().replace("NCCL_NET=OFI", "NCCL_NET=Socket"))
    result = run([nccl], root, env)
    assert result.returncode == 1 and (root / "run/gpufleet/failure").read_text() == "nccl:error\n"
    assert "NCCL_NET='Socket' in the environment" in result.stderr and "NCCL_NET 'OFI' in nccl_env" in result.stderr


def test_a_dl_image_below_the_branch_fails_with_a_permanent_reason(gpu_node):
    root, env, driver = gpu_node("570.133.20", software_mode="check", software_driver="",
                                 software_driver_min_branch=580)
    result = run([driver], root, env)
    assert result.returncode == 1
    assert (root / "run/gpufleet/failure").read_text() == "driver:570.133.20:min=580\n"


def test_a_plain_image_holds_the_exact_pin(gpu_node):
    root, env, driver = gpu_node("580.65.06", software_mode="install", software_driver=DRIVER_VERSION)
    result = run([driver], root, env)
    assert result.returncode == 1
    assert (root / "run/gpufleet/failure").read_text() == f"driver:580.65.06:pinned={DRIVER_VERSION}\n"
    root, env, driver = gpu_node(DRIVER_VERSION, software_mode="install", software_driver=DRIVER_VERSION)
    assert run([driver], root, env).returncode == 0


KERNEL = "5.15.0-1034-aws"  # the image's running kernel, as the stub uname says (not the newest one)
INSTALL_STUBS = {
    # nvidia-smi answers only once the driver package is "installed"; every other tool records its call. A tool
    # fails where the test names it in GPUFLEET_TEST_FAIL ("modprobe", "linux-headers").
    "nvidia-smi": '[ -e "$GPUFLEET_TEST_CALLS.installed" ] || exit 9\necho "$GPUFLEET_TEST_DRIVER"',
    "uname": f'[ "$*" = -r ] && echo {KERNEL} || command -p uname "$@"',
    "curl": 'echo "curl $*" >> "$GPUFLEET_TEST_CALLS"',
    # The keyring package lists the repository entry it adds (dpkg -L), which names NVIDIA's own host.
    "dpkg": 'echo "dpkg $*" >> "$GPUFLEET_TEST_CALLS"\n'
            '[ "$*" != "-L cuda-keyring" ] || echo /etc/apt/sources.list.d/cuda-ubuntu2204-x86_64.list',
    "modprobe": 'echo "modprobe $*" >> "$GPUFLEET_TEST_CALLS"\n[ "$GPUFLEET_TEST_FAIL" != modprobe ]',
    "apt-get": 'echo "apt-get $*" >> "$GPUFLEET_TEST_CALLS"\n'
               'case "$*" in *" install "*linux-headers-*) [ "$GPUFLEET_TEST_FAIL" != linux-headers ] ;;\n'
               '  *" install "*cuda-drivers*) touch "$GPUFLEET_TEST_CALLS.installed" ;; esac',
}


def _install(gpu_node, fail: str = "", **mirrors: str):
    """gpufleet-driver on a plain image without a driver, against INSTALL_STUBS: (result, root, recorded calls)."""
    root, env, driver = gpu_node(DRIVER_VERSION, software_mode="install", software_driver=DRIVER_VERSION,
                                 **{f"mirrors_{kind}": url for kind, url in mirrors.items()})
    keyring_entry = root / "etc/apt/sources.list.d/cuda-ubuntu2204-x86_64.list"
    keyring_entry.parent.mkdir(parents=True, exist_ok=True)
    keyring_entry.write_text("deb [signed-by=...] https://developer.download.nvidia.com/compute/cuda/repos/... /\n")
    for name, body in INSTALL_STUBS.items():
        (root / "test-bin" / name).write_text(f"#!/usr/bin/env bash\n{body}\n")
        (root / "test-bin" / name).chmod(0o755)
    (root / "run/gpufleet").mkdir(parents=True, exist_ok=True)
    (root / "run/gpufleet/apt-updated").touch()
    calls = root / "calls"
    result = run([driver], root, env | {"GPUFLEET_TEST_CALLS": str(calls), "GPUFLEET_TEST_FAIL": fail})
    return result, root, calls.read_text().splitlines()


def test_a_plain_image_installs_the_pin_from_nvidias_repository_after_indexing_it(gpu_node):
    """The running kernel's headers first (the driver's DKMS build targets the kernels with headers), then the driver
    from the repository the keyring adds, so the index is refreshed after it, even when this boot already ran its one
    `apt-get update` (the store client's python3-venv)."""
    result, _, lines = _install(gpu_node)
    assert result.returncode == 0, result.stderr
    order = [line.split()[0] + (" update" if " update" in line else " install" if " install " in line else "")
             for line in lines]
    assert order == ["apt-get install", "curl", "dpkg", "dpkg", "apt-get update", "apt-get install", "modprobe"], lines
    assert lines[0].endswith(f"install -yq --no-install-recommends linux-headers-{KERNEL}"), lines[0]
    major = DRIVER_VERSION.split(".")[0]
    assert lines[5].endswith(f"install -yq --no-install-recommends --allow-downgrades cuda-drivers-{major}="
                             f"{DRIVER_VERSION}-* datacenter-gpu-manager nvidia-container-toolkit"), lines[5]
    assert "DPkg::Lock::Timeout=" in lines[5], "waits for another apt instead of failing"
    assert "https://developer.download.nvidia.com/compute/cuda/repos/" in lines[1], "NVIDIA's own host by default"


def test_a_plain_image_takes_nvidias_repository_and_its_distribution_from_the_plans_mirrors(gpu_node):
    """With the plan's CUDA and archive mirrors (a mainland region: docs/cloud-facts.md#package-mirrors), the keyring
    and the driver come from the CUDA mirror, whose entry replaces the one the keyring adds (NVIDIA's host), and apt
    reads gpufleet's own sources, the image's release from the archive mirror, not the image's."""
    cuda, archive = "http://mirror.corp.example/nvidia-cuda", "http://mirrors.corp.example"
    result, root, lines = _install(gpu_node, cuda=cuda, apt=archive)
    assert result.returncode == 0, result.stderr
    assert lines[1].startswith("curl ") and f" {cuda}/ubuntu" in lines[1] and "nvidia.com" not in lines[1], lines[1]
    assert not (root / "etc/apt/sources.list.d/cuda-ubuntu2204-x86_64.list").exists(), "NVIDIA's host is gone"
    own = root / "etc/gpufleet/apt"
    (entry,) = (own / "sources.list.d").iterdir()
    assert entry.read_text().startswith(f"deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] {cuda}/ubuntu")
    apt_calls = [line for line in lines if line.startswith("apt-get")]
    assert all(f"Dir::Etc::SourceList={own}/sources.list -o Dir::Etc::SourceParts={own}/sources.list.d" in line
               for line in apt_calls), apt_calls
    # This host's release, laid out as its distribution's archive is (Debian: security in its own tree).
    release = dict(line.split("=", 1) for line in Path("/etc/os-release").read_text().splitlines() if "=" in line)
    name = release["VERSION_CODENAME"].strip('"')
    if release["ID"] == "debian":
        suites = [f"{archive}/debian {name} main", f"{archive}/debian {name}-updates main",
                  f"{archive}/debian-security {name}-security main"]
    else:
        parts = "main restricted universe multiverse"
        suites = [f"{archive}/ubuntu {name}{suffix} {parts}" for suffix in ("", "-updates", "-security")]
    assert (own / "sources.list").read_text().splitlines() == [f"deb {suite}" for suite in suites]


@pytest.mark.parametrize(("fail", "reason"), [("modprobe", f"driver:module:{KERNEL}"),
                                              ("linux-headers", f"driver:headers:{KERNEL}")])
def test_a_driver_module_that_cannot_load_on_the_images_kernel_fails_for_good(gpu_node, local_node, tmp_path,  # noqa: F811
                                                                              fail, reason):
    """A module DKMS could not build for the running kernel (or no headers for it) is the image's: the node fails
    with a permanent reason, which spends the group's failure budget instead of asking for a replacement forever."""
    result, root, lines = _install(gpu_node, fail)
    assert result.returncode == 1
    assert (root / "run/gpufleet/failure").read_text() == f"{reason}\n"
    if fail == "linux-headers":
        assert not [line for line in lines if "cuda-drivers" in line], "no driver built without the headers"
    outcomes = _report_from_new_nodes(local_node, reason, FAILURE_BUDGET + 1, tmp_path)
    assert f'gpufleet_replacement_stopped{{reason="{reason}"}} 1' in outcomes[-1]


def _report_from_new_nodes(local_node, reason: str, nodes: int, tmp_path):  # noqa: F811
    """gpufleet-report REASON on `nodes` successive nodes of one group (each a fresh node id, one bucket)."""
    outcomes = []
    for _ in range(nodes):
        root, _, env, _ = local_node(failure_uri=f"file://{tmp_path}/bucket/failures")
        (root / "var/lib/gpufleet/node-id").unlink(missing_ok=True)
        result = run([root / "opt/gpufleet/bin/gpufleet-report", reason], root, env)
        assert result.returncode == 0, result.stderr
        outcomes.append((root / "var/lib/gpufleet/metrics/health.prom").read_text())
    return outcomes


def test_a_permanent_failure_stops_the_replacements_after_the_budget(local_node, tmp_path):  # noqa: F811
    reason = "driver:570.133.20:min=580"
    outcomes = _report_from_new_nodes(local_node, reason, FAILURE_BUDGET + 1, tmp_path)
    stopped = [f'gpufleet_replacement_stopped{{reason="{reason}"}} 1' in metrics for metrics in outcomes]
    assert stopped == [False] * FAILURE_BUDGET + [True]
    assert f'gpufleet_permanent_failures{{reason="{reason}"}} {FAILURE_BUDGET + 1}' in outcomes[-1]
    records = tmp_path / "bucket/failures/driver_570.133.20_min=580"
    assert len(list(records.iterdir())) == FAILURE_BUDGET + 1, "one record per node"


def test_a_reason_a_new_node_may_fix_is_always_replaced(local_node, tmp_path):  # noqa: F811
    outcomes = _report_from_new_nodes(local_node, "gpus:7/8", FAILURE_BUDGET + 1, tmp_path)
    assert not [metrics for metrics in outcomes if "replacement_stopped" in metrics]
    assert not (tmp_path / "bucket/failures").exists()


@pytest.mark.parametrize(("index", "trusted"), [
    ("http://mirrors.tencentyun.com/pypi/simple/", "mirrors.tencentyun.com"), ("https://pypi.corp.example/simple", ""),
    ("", "")])
def test_every_pip_a_node_script_runs_goes_through_the_plans_index(local_node, index, trusted):  # noqa: F811
    """pip reads its index from PIP_INDEX_URL in every node script (the tools venv's and the job's); an http:// one,
    as the clouds' in-VPC mirrors serve, must be a trusted host for pip to use it; an https:// one is not made one."""
    root, _, env, _ = local_node(mirrors_pip=index)
    lib = root / "opt/gpufleet/bin/gpufleet-lib.sh"
    result = run(["bash", "-c", f'. "{lib}" && printf "%s|%s" "${{PIP_INDEX_URL-}}" "${{PIP_TRUSTED_HOST-}}"'], root,
                 env | {"PIP_INDEX_URL": "", "PIP_TRUSTED_HOST": ""})
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{index}|{trusted}"
