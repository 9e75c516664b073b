"""The node gate as gpufleet-health runs it (`python -m health`), on CPU stand-ins for GPUs: the report, the metrics,
the exit code and the reason the node scripts act on; nvidia-smi and dmesg are fake executables where a test needs
them, the matmuls, copies and the all-reduce run for real."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "cloud-init"))

from health.result import Check, Report, prometheus  # noqa: E402
from health_configs import node_config, tiny  # noqa: E402

pytest.importorskip("torch")
SAMPLE = re.compile(r'^(gpufleet_health_[a-z_]+)\{([a-z]+="(?:[^"\\]|\\.)*"(?:,[a-z]+="(?:[^"\\]|\\.)*")*)\} (\S+)$')


def gate(tmp_path: Path, config: dict, *args: str, path: str | None = None) -> subprocess.CompletedProcess:
    (tmp_path / "node.json").write_text(json.dumps(config))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "cloud-init"), "PATH": path or f"{Path(sys.executable).parent}:/bin"}
    cmd = [sys.executable, "-m", "health", "--config", str(tmp_path / "node.json"),
           "--out", str(tmp_path / "gate.json"), "--metrics", str(tmp_path / "gate.prom"),
           "--reason-file", str(tmp_path / "reason"), *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)


def report(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "gate.json").read_text())


def test_a_healthy_node_passes_every_family_and_says_so(tmp_path):
    done = gate(tmp_path, tiny(), "--devices", "cpu:2")
    assert done.returncode == 0, done.stderr
    found = report(tmp_path)
    assert found["ok"] and found["kind"] == "gate" and found["level"] == "light" and found["schema"] == 1
    checks = {(c["check"], c["subject"]) for c in found["checks"]}
    assert {("gpus", "node"), ("matmul", "cpu0"), ("matmul", "cpu1"), ("hbm", "cpu0"), ("p2p", "cpu0->cpu1"),
            ("allreduce", "node"), ("dcgm", "level1")} <= checks
    allreduce = next(c for c in found["checks"] if c["check"] == "allreduce")
    assert allreduce["figure"] > 0 and "2 gloo ranks" in allreduce["detail"]
    assert not (tmp_path / "reason").exists()
    assert 'gpufleet_health_ok{kind="gate",level="light"} 1' in (tmp_path / "gate.prom").read_text()


def test_the_all_reduce_runs_under_the_gates_environment(tmp_path, monkeypatch):
    """gpufleet-health loads the node's NCCL settings and the plugin's library path into the gate's environment
    (test_health_node_scripts.py); the all-reduce's ranks inherit it: a socket interface it names is the ranks'."""
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "gpufleet-none")
    assert gate(tmp_path, tiny(), "--devices", "cpu:2").returncode == 1
    allreduce = next(c for c in report(tmp_path)["checks"] if c["check"] == "allreduce")
    assert not allreduce["ok"] and "torchrun exited" in allreduce["detail"]


def test_a_slow_device_fails_with_its_figure_as_the_reason(tmp_path):
    (tmp_path / "reason").write_text("stale\n")
    done = gate(tmp_path, tiny({"matmul_tflops": 6e5}, gpus=1), "--devices", "cpu")
    assert done.returncode == 1
    found = report(tmp_path)
    matmul = next(c for c in found["checks"] if c["check"] == "matmul")
    assert not found["ok"] and not matmul["ok"] and matmul["threshold"] == 6e5, "the plan's number, as written"
    reason = (tmp_path / "reason").read_text().strip()
    assert re.fullmatch(r"matmul:cpu0=[0-9.e-]+:min=600000", reason), reason
    assert "FAILED matmul cpu0" in done.stderr and "Traceback" not in done.stderr
    metrics = (tmp_path / "gate.prom").read_text()
    assert 'gpufleet_health_check_ok{kind="gate",check="matmul",subject="cpu0"} 0' in metrics


def test_stand_ins_for_a_gpu_row_are_counted_and_measured_but_not_held_to_its_gpu_figures(tmp_path):
    config = tiny({"matmul_tflops": 6e5, "hbm_gbs": 1e9, "allreduce_busbw_gbs": 7e8})
    assert gate(tmp_path, config, "--devices", "cpu:2").returncode == 1  # the same CPUs held to the GPUs' fail
    done = gate(tmp_path, config, "--devices", "cpu:2", "--stand-in")
    assert done.returncode == 0, done.stderr
    rows = {(c["check"], c["subject"]): c for c in report(tmp_path)["checks"]}
    assert rows[("gpus", "node")]["threshold"] == 2
    for key in (("matmul", "cpu0"), ("hbm", "cpu1"), ("allreduce", "node")):
        assert rows[key]["figure"] > 0 and rows[key]["threshold"] is None, rows[key]
    done = gate(tmp_path, config, "--devices", "cpu:1", "--stand-in")
    assert done.returncode == 1 and (tmp_path / "reason").read_text().strip() == "gpus:node=1:min=2"


FAKE_SMI = """#!/bin/sh
case "$*" in
  *--query-remapped-rows*) echo "00000000:18:00.0, No, No" ;;
  *pcie.link*) echo "0, 5, 5, 8, 16, 0x0000000000000004, 1755, 1980" ;;
  *ecc.errors*) echo "0, 00000000:18:00.0, 0, [N/A]" ;;
  *) exit 2 ;;
esac
"""


def test_a_gpu_at_x8_fails_the_gate_through_nvidia_smi(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    for name, text in (("nvidia-smi", FAKE_SMI), ("dmesg", "#!/bin/sh\necho '[ 1.0] Linux version'\n")):
        (fake / name).write_text(text)
        (fake / name).chmod(0o755)
    done = gate(tmp_path, tiny(gpus=1), "--devices", "cpu", path=f"{fake}:{Path(sys.executable).parent}:/bin")
    assert done.returncode == 1, done.stderr
    rows = {(c["check"], c["subject"]): c for c in report(tmp_path)["checks"]}
    assert [k for k, c in rows.items() if not c["ok"]] == [("pcie-width", "gpu0")]
    assert rows[("pcie-gen", "gpu0")]["ok"] and rows[("clocks", "gpu0")]["ok"] and rows[("xid", "gpu0")]["ok"]
    assert (tmp_path / "reason").read_text().strip() == "pcie-width:gpu0=8:min=16"


def _without(key: str) -> str:
    """The plan's node.json without one field (a dotted path)."""
    config = node_config()
    *parents, last = key.split(".")
    inner = config
    for parent in parents:
        inner = inner[parent]
    del inner[last]
    return json.dumps(config)


@pytest.mark.parametrize(("config", "words"), [
    ("{", "not JSON"), ("[]", "the file must be a JSON object"),
    (json.dumps(node_config(health={"level": "max"})), "'health.level' must be one of light, deep"),
    (_without("health.nccl_network"), "missing 'health.nccl_network' (the network name NCCL logs"),
    (_without("health.thresholds.matmul_tflops"), "missing 'health.thresholds.matmul_tflops'"),
    (_without("gpus"), "missing 'gpus'"), (_without("fabric"), "missing 'fabric'"),
    (json.dumps(node_config(nvswitch=1)), "'nvswitch' must be true or false: NVLink/NVSwitch between the GPUs (got 1)"),
    (json.dumps(node_config(gpus=True)), "'gpus' must be the GPUs the instance type promises (got True)"),
    (json.dumps(node_config({"hbm_gbs": "fast"})), "'health.thresholds.hbm_gbs' must be a number of its unit, or null"),
    (json.dumps(node_config(nccl_env=[["NCCL_DEBUG", "WARN"]])), "'nccl_env' has no NCCL_NET"),
    (json.dumps(node_config(nccl_env=[["NCCL_NET"]])), "'nccl_env' must be the NCCL env nccl.env exports"),
])
def test_a_config_missing_or_mistyping_a_field_exits_2_and_names_it(tmp_path, config, words):
    """Fail closed: the gate judges only what the plan decided, never a default for what it did not write."""
    path = tmp_path / "node.json"
    path.write_text(config)
    done = subprocess.run([sys.executable, "-m", "health", "--config", str(path), "--devices", "cpu"], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "cloud-init")}, capture_output=True, text=True)
    assert done.returncode == 2 and words in done.stderr and str(path) in done.stderr and "Traceback" not in done.stderr


def test_a_node_without_the_promised_gpus_fails_and_checks_nothing_else(tmp_path):
    done = gate(tmp_path, node_config(gpus=8), "--devices", "cuda")
    assert done.returncode == 1
    assert (tmp_path / "reason").read_text().strip() == "gpus:node=0:min=8"


def test_the_metrics_are_node_exporter_textfile_format():
    rows = [Check("matmul", 'gpu"0', 700.5, "TFLOP/s", 593.4, ">=", True), Check("dcgm", "level1", None, "", None,
                                                                                "skip", True)]
    text = prometheus(Report("gate", "ip-10-0-0-1", "deep", False, 1.7e9, 42.5, rows))
    families = []
    for line in text.splitlines():
        if line.startswith("# TYPE"):
            families.append(line.split()[2])
            assert line.endswith(" gauge")
        elif not line.startswith("# HELP"):
            name, labels, value = SAMPLE.match(line).groups()
            assert name == families[-1] and float(value) == float(value)
    assert len(families) == len(set(families)) == 6
    assert 'subject="gpu\\"0",unit="TFLOP/s"} 700.5' in text and "gpufleet_health_timestamp_seconds" in text
    assert 'check="dcgm"' in text and text.count('check="dcgm"') == 1, "a skipped row has no figure, only its verdict"
