"""A harness process killed mid-run (SIGKILL: no cleanup code runs) takes its machines with it, and the next run's
sweep removes the namespaces and cgroups it left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from here.boot import lifetime

pytestmark = pytest.mark.usefixtures("needs_root")
ROOT = Path(__file__).resolve().parents[2]
HOLDER = """
import json, secrets, subprocess, sys, time
from pathlib import Path
from here.boot import lifetime, rootfs
from here.boot.machine import Machine, MachineConfig
run = Path(sys.argv[1]); name = "gfbk" + secrets.token_hex(2)
run.mkdir(parents=True)
subprocess.run(["ip", "netns", "add", name], check=True)
config = MachineConfig(name=name, namespace=name, lower=rootfs.tree(rootfs.PLAIN), directory=run / "m", dmi={},
                       files={"/etc/cloud/cloud-init.disabled": (b"", 0o644)})
machine = Machine(config)
lifetime.record(run, [name], [machine.cgroup], keep=False)
machine.start()
print(json.dumps({"pid1": machine.pid1, "namespace": name, "cgroup": str(machine.cgroup)}), flush=True)
time.sleep(600)
"""


def test_a_killed_run_leaves_nothing_after_the_next_sweep(tmp_path):
    runs = tmp_path / "runs"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(runs / "gfbk")], cwd=ROOT, text=True,
                              stdout=subprocess.PIPE)
    try:
        started = json.loads(holder.stdout.readline())
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    deadline = time.monotonic() + 20
    while Path(f"/proc/{started['pid1']}").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not Path(f"/proc/{started['pid1']}").exists(), "the machine outlived the harness"
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert started["namespace"] in namespaces  # what a process cannot take with it...
    assert lifetime.sweep(runs) == ["gfbk"]  # ...the next run's sweep removes
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert started["namespace"] not in namespaces
    assert not Path(started["cgroup"]).exists()
    assert not (runs / "gfbk").exists()


def test_a_live_run_is_not_swept(tmp_path):
    run = tmp_path / "runs" / "live"
    run.mkdir(parents=True)
    lifetime.record(run, ["gfb-never-made"], [], keep=False)
    assert lifetime.sweep(tmp_path / "runs") == []
    assert (run / lifetime.OWNER).exists()
