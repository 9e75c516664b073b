"""The acceptance's hook into the job (health.job), run as the job's worker would be: a child of a stand-in torchrun
agent (a shell that would wait for it), with the node's directories and the plan's health config in its env."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from health_configs import write_node_config

ROOT = Path(__file__).resolve().parents[2]
pytest.importorskip("torch")

WORKER = """
import sys
from health.job import NodeFailed, accepted_world

def setup(device):
    print("joined the world", flush=True)
    sys.exit(3)

try:
    accepted_world(setup, "cpu", 1)
except NodeFailed as error:
    print(f"left: {error}", flush=True)
"""


def test_a_node_already_named_leaves_without_joining_and_stops_its_agent(tmp_path):
    """Its agent restarted its workers before the stop reached it: the new worker must not join the round (the
    others would wait on it), and stops the agent again."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "acceptance-reason").write_text("acceptance-node:node0=1.2:min=4.5\n")
    config = write_node_config(tmp_path / "node.json")
    env = os.environ | {"RUN": str(run_dir), "STATE": str(tmp_path / "state"), "BIN": str(tmp_path / "bin"),
                        "GF_HEALTH_CONFIG": str(config), "TORCHELASTIC_RUN_ID": "test",
                        "PYTHONPATH": f"{ROOT}/cloud-init:{ROOT}", "WORKER": WORKER}
    out = tmp_path / "worker.out"
    started = time.monotonic()
    agent = subprocess.run(["bash", "-c", f'"{sys.executable}" -c "$WORKER" > {out} 2>&1; sleep 30'], env=env,
                           timeout=40)
    assert agent.returncode == -signal.SIGTERM, "the worker stopped its agent"
    assert time.monotonic() - started < 30
    for _ in range(100):
        if "left:" in out.read_text():
            break
        time.sleep(0.1)
    text = out.read_text()
    assert "joined the world" not in text
    assert "left: this node was named by the cluster acceptance (acceptance-node:node0=1.2:min=4.5)" in text, text


def _job(tmp_path: Path, module: str) -> subprocess.CompletedProcess:
    """``python -m MODULE`` as gpufleet-train starts it (from the code's root, cloud-init/ on PYTHONPATH, the plan's
    node.json in GF_HEALTH_CONFIG), on a node the acceptance named in an earlier round."""
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    (run_dir / "acceptance-reason").write_text("acceptance-node:node0=1.2:min=4.5\n")
    env = {k: v for k, v in os.environ.items() if k not in ("TORCHELASTIC_RUN_ID", "PYTHONPATH")}
    env |= {"RUN": str(run_dir), "STATE": str(tmp_path / "state"), "BIN": str(tmp_path / "bin"),
            "GF_HEALTH_CONFIG": str(write_node_config(tmp_path / "node.json")), "PYTHONPATH": f"{ROOT}/cloud-init"}
    command = [sys.executable, "-m", module, "--model", "tiny", "--seq-len", "16", "--device", "cpu", "--steps", "1",
               "--kernels", "off", "--run-dir", str(tmp_path / module), "--progress", "false"]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_the_nodes_command_forms_the_jobs_world_through_the_acceptance(tmp_path):
    """health.run_job hands accepted_world to the job: a named node's job leaves before its world forms."""
    left = _job(tmp_path, "health.run_job")
    assert left.returncode == 1, left.stderr
    assert "error: this node was named by the cluster acceptance (acceptance-node:node0=1.2:min=4.5)" in left.stderr
    assert not (tmp_path / "health.run_job" / "summary.json").exists()


def test_the_job_alone_runs_no_acceptance(tmp_path):
    """training.train knows nothing of the node: with the node's environment it trains as anywhere else."""
    alone = _job(tmp_path, "training.train")
    assert alone.returncode == 0, alone.stderr
    assert json.loads((tmp_path / "training.train" / "summary.json").read_text())["steps_completed"] == 1
