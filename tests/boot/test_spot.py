"""The whole path after the gate, booted for real: aws-g4dn-dev with spot workers (the fake GPU reporting the plan's
pinned driver) and the local stack booted (`fleet up --stack local --boot`'s plan) with spot workers, both with the
local cluster's tiny job. Both nodes pass the gate, torchrun forms the job across the two machines, and a spot notice
on the emulated metadata service makes the worker checkpoint, push the checkpoint to the bucket (S3 on AWS, the
directory every local machine mounts) and leave within the notice's 2 minutes."""

from __future__ import annotations

import json
import os

import pytest
import yaml
from boot_helpers import wait

from fleet.stacks import resolve, spec_and_plan
from here.boot import report, store
from here.boot.cluster import Boot, node_settings
from spec.stackfile import CLUSTER_KEY

pytestmark = pytest.mark.usefixtures("needs_root")

JOB = {"model": "tiny", "steps": 100000, "seqLen": 128, "globalBatch": 24, "microBatch": 4, "checkpointEvery": 10,
       "logEvery": 1}
TIMEOUT_S = 1200


@pytest.fixture(scope="module", params=["aws-g4dn-dev", "local"])
def training(request, tmp_path_factory):
    stack = resolve(request.param, None)
    config = dict(stack.config)
    config[CLUSTER_KEY] = {**config[CLUSTER_KEY], "autoscaling": {"standby": 0}, "job": JOB,
                           "market": {"onDemandBase": 1, "spotPercent": 100}}
    path = tmp_path_factory.mktemp("stack") / f"Pulumi.{stack.name}.yaml"
    path.write_text(yaml.safe_dump({"config": config}))
    plan = spec_and_plan(resolve(None, str(path)), booted=True)[1]
    assert plan.worker.spot and not plan.head.spot
    pinned = node_settings(plan.head.user_data)["GF_SOFTWARE_DRIVER"]
    with Boot(plan, driver=pinned, keep=bool(os.environ.get("GF_BOOT_KEEP"))) as boot:
        outcomes = {node.name: report.wait_outcome(node, TIMEOUT_S) for node in boot.nodes}
        yield plan, boot, outcomes


def test_both_nodes_pass_the_gate_and_train_together(training):
    _, boot, outcomes = training
    assert outcomes == {"head": "training", "worker-1": "training"}
    first = wait(lambda: [r.phases for r in map(report.collect, boot.nodes) if r.phases["first-step"]], 600)
    assert first, "no node logged a training step"
    assert first[0]["rendezvous"] is not None and first[0]["gate"] < first[0]["rendezvous"] < first[0]["first-step"]


def test_a_spot_notice_checkpoints_pushes_and_leaves(training):
    plan, boot, outcomes = training
    if outcomes.get("worker-1") != "training":
        pytest.skip(f"the worker never trained: {outcomes}")
    worker = boot.node("worker-1")
    checkpoints = worker.settings["GF_CHECKPOINT_DIR"]
    assert wait(lambda: worker.machine.run("find", checkpoints, "-type", "f").stdout.strip(), 600), "no checkpoint"
    boot.spot_notice("worker-1", warning_s=120)

    def left() -> bool:  # the watcher ends once the training unit is stopped and its ExecStopPost push is done
        return "left the job after the interruption notice" in worker.machine.run(
            "journalctl", "-u", "gpufleet-spot.service", "-o", "cat", "--no-pager").stdout

    assert wait(left, 240), worker.machine.run("journalctl", "-u", "gpufleet-spot", "--no-pager").stdout[-3000:]
    spot = worker.machine.run("journalctl", "-u", "gpufleet-spot.service", "--no-pager").stdout
    assert "interruption notice" in spot and "SIGUSR1 to training workers" in spot
    assert "left the job after the interruption notice" in spot
    assert '"action": "terminate"' in worker.machine.read("/run/gpufleet/spot-notice").decode()
    # The checkpoint reached the bucket: listed from the head (with the head's own role on AWS).
    listing = boot.node("head").machine.run(
        *(("find", plan.storage.checkpoint_uri.removeprefix("file://"), "-type", "f") if store.shared_directory(plan)
          else ("aws", "s3", "ls", "--recursive", f"{plan.storage.checkpoint_uri}/")))
    assert listing.returncode == 0 and listing.stdout.strip(), listing.stderr


def test_the_spot_node_leaves_within_the_two_minutes_aws_gives(training):
    _, boot, _ = training
    worker = boot.node("worker-1")
    entries = worker.machine.run("journalctl", "-u", "gpufleet-spot.service", "-o", "json", "--no-pager").stdout
    times = {}
    for line in entries.splitlines():
        entry = json.loads(line)
        for mark in ("interruption notice", "left the job"):
            if mark in str(entry.get("MESSAGE", "")):
                times.setdefault(mark, int(entry["__MONOTONIC_TIMESTAMP"]) / 1e6)
    if "interruption notice" not in times:
        pytest.skip("no spot notice was given (test_a_spot_notice_checkpoints_pushes_and_leaves did not run)")
    assert "left the job" in times and times["left the job"] - times["interruption notice"] < 120, times
    print(f"spot notice to leaving: {times['left the job'] - times['interruption notice']:.1f} s")
