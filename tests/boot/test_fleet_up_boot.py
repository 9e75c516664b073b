"""`fleet up --boot` as a user runs it: a cloud stack's head and worker boot the plan's user-data with real cloud-init
and systemd to the job's first step; the summary's phases come from the machines and happen in the boot's order, and
nothing of the run is left behind. (The local stack's boot, the same Boot under `fleet up --stack local --boot`, is
tests/boot/test_spot.py's: one boot of it in the suite is enough.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from here.boot import report

pytestmark = pytest.mark.usefixtures("needs_root")

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 900
BOOT_ORDER = ("user-data", "bundle", "cloud-init", "gate", "rendezvous", "first-step")


def _netns() -> set[str]:
    return set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split())


@pytest.mark.parametrize(("stack", "cloud", "options"), [("tencent-spot", "tencentcloud", ["--tiny-job"])])
def test_a_stack_boots_to_its_first_training_step(stack, cloud, options):
    before = _netns()
    run = subprocess.run([sys.executable, "-m", "fleet", "up", "--stack", stack, "--boot", *options,
                          "--json", "--boot-timeout", str(TIMEOUT_S)], cwd=ROOT, capture_output=True, text=True,
                         timeout=TIMEOUT_S + 120)
    assert run.returncode == 0, run.stderr[-4000:]
    summary = json.loads(run.stdout)
    assert (summary["cluster"], summary["mode"], summary["cloud"]) == (stack, "boot", cloud)
    assert {name: node["outcome"] for name, node in summary["nodes"].items()} == \
        {"head": "training", "worker-1": "training"}
    head = summary["nodes"]["head"]["phases"]
    # The bundle arrives inside cloud-init's final stage (runcmd's `gpufleet-node install`), before it ends.
    order = [head[phase] for phase in BOOT_ORDER]
    assert None not in order, head  # rank 0 runs on the head: every phase, first step included, happened there
    assert order == sorted(order), head
    assert set(BOOT_ORDER) == set(report.PHASES)
    assert summary["cluster_phases"]["first-step"] == head["first-step"]
    assert "booted 2 machines (head, worker-1)" in run.stderr
    assert summary["run"] is None and _netns() <= before  # machines, namespaces and the run's directory are gone
