"""The local rolling update (issue 31): the plan says which local nodes a code change rolls, and `fleet up` run again
after a change of the code rolls them one at a time while the job goes on, each checkpointing before it leaves,
without a step lost or repeated (the sequence audit: every step trained once, the job's runs adding up to its
steps). The end-to-end drill runs on a copy of this checkout, so that changing its code touches nothing here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from fleet.stacks import resolve, spec_and_plan
from here.local import cloudconfig, instances, layout, progress, rollout
from here.local.errors import LocalError
from here.local.state import State
from plan import planner
from plan.bundle import bundle_sha256
from plan.rollout import HOLD, ROLL

ROOT = Path(__file__).resolve().parents[2]
JOB = {"model": "tiny", "seqLen": 128, "globalBatch": 12, "microBatch": 2, "logEvery": 1}
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces and nftables "
                                                           "(CI runs tests/local as root)")


def stack(directory: Path, name: str, **cluster) -> Path:
    body = {"cloud": "local", "instanceType": "cpu", "nodes": {"min": 1, "desired": 3, "max": 3},
            "network": {"vpcCidr": "10.78.0.0/24"}, "job": JOB | {"steps": 20}} | cluster
    path = directory / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": {"gpufleet:cluster": body}}))
    return path


def plan_with(path: Path, kernels: bool, monkeypatch):
    """The stack's plan, its code bundle this checkout's with or without the kernels: two real bundles."""
    monkeypatch.setattr(planner, "bundle_sha256", lambda **_: bundle_sha256(kernels))
    return spec_and_plan(resolve(None, str(path)))[1]


# --- no root needed -------------------------------------------------------------------------------------------


def test_the_plan_rolls_the_local_workers_one_at_a_time_and_the_head_keeps_the_job(tmp_path, monkeypatch):
    path = stack(tmp_path, "lr-plan")
    old, new = plan_with(path, False, monkeypatch), plan_with(path, True, monkeypatch)
    assert old.storage.code_sha256 != new.storage.code_sha256
    assert old.head.user_data != new.head.user_data and old.worker.user_data != new.worker.user_data
    lay = layout.layout(new)
    assert {n.name: rollout.mechanism(new, n) for n in lay.nodes} == {"head": HOLD, "worker-1": ROLL,
                                                                        "worker-2": ROLL}
    said = [r.how for r in new.rollout]
    assert said[0].startswith("head (1 node): not rolled"), said
    assert any(line.startswith("on-demand (2 nodes): `fleet up` rolls them 1 at a time") for line in said), said
    # A worker hears its rollout as a node its group takes away: the spot watcher runs on it, the termination hook's.
    worker_env = "\n".join(f["content"] for f in cloudconfig.document(new.worker.user_data)["write_files"])
    assert "GF_DRAIN_HOOK='gpufleet-drain'" in worker_env


def test_only_a_change_of_the_code_rolls_a_running_cluster(tmp_path, monkeypatch):
    """The bundle changes nothing in the fingerprint of what nodes are told; a job setting does, and `fleet up` then
    refuses (a running job cannot take it), naming the command that removes the cluster."""
    path = stack(tmp_path, "lr-settings")
    old, new = plan_with(path, False, monkeypatch), plan_with(path, True, monkeypatch)
    assert rollout.settings(old) == rollout.settings(new)
    path.write_text(path.read_text().replace("steps: 20", "steps: 30"))
    other = plan_with(path, True, monkeypatch)
    assert rollout.settings(other) != rollout.settings(old)
    running = State(cluster=old.name, stack=old.stack, mode="namespaces", phase="running", owner=os.getpid(),
                    code_sha256=old.storage.code_sha256, settings=rollout.settings(old))
    with pytest.raises(LocalError) as refused:
        rollout.request(other, layout.layout(other), running, lambda _: None)
    assert refused.value.code == 2 and "other settings" in str(refused.value) and "fleet down" in str(refused.value)


def test_the_roller_takes_one_worker_at_a_time_and_the_next_only_once_the_job_reformed_with_it(tmp_path,
                                                                                                  monkeypatch):
    """The owner's side on the files it reads and writes: the leave notice on the node's metadata, the fresh boot
    from the new user-data once the machine ended, the rejoin read from the head's re-formation line."""
    path = stack(tmp_path, f"lr-roller-{os.getpid()}")
    old, new = plan_with(path, False, monkeypatch), plan_with(path, True, monkeypatch)
    lay = layout.layout(old)
    lay.directory.mkdir(parents=True)
    try:
        booted, events = [], []
        roller = rollout.Roller(old, lay, lambda node, user_data: booted.append((node.name, user_data)) or node.name,
                                events.append)
        rollout.save(lay, rollout.Request(new.storage.code_sha256, {"head": new.head.user_data,
                                                                    "worker": new.worker.user_data},
                                          [rollout.NodeRoll("worker-1"), rollout.NodeRoll("worker-2")], ["head"],
                                          time.time()))
        procs = {n.name: n.name for n in lay.nodes}
        state = {n.name: lay.metadata / instances.instance(old, n).instance_id / "lifecycle-state"
                 for n in lay.nodes}
        roller.poll(procs)
        assert state["worker-1"].read_text() == "Terminated" and not state["worker-2"].exists()
        roller.poll(procs)
        assert booted == [], "booted while the old machine still runs"
        del procs["worker-1"]  # its spot watcher took it out of the job
        roller.poll(procs)
        assert booted == [("worker-1", new.worker.user_data)] and state["worker-1"].read_text() == "InService"
        lay.nodes[0].log.parent.mkdir(parents=True, exist_ok=True)
        lay.nodes[0].log.write_text("resumed from bucket (step 9, written by 4 ranks, now 4)\n")
        roller.poll(procs)
        roller.poll(procs)
        assert not state["worker-2"].exists(), "the job has not re-formed with all 3 nodes yet"
        assert not rollout.load(lay).nodes[0].rejoined_unix
        with lay.nodes[0].log.open("a") as log:
            log.write("resumed from bucket (step 12, written by 4 ranks, now 6)\n")
        roller.poll(procs)
        assert rollout.load(lay).nodes[0].rejoined_unix > 0
        roller.poll(procs)
        assert state["worker-2"].read_text() == "Terminated"
        del procs["worker-2"]
        roller.poll(procs)
        with lay.nodes[0].log.open("a") as log:
            log.write("resumed from bucket (step 15, written by 4 ranks, now 6)\n")
        roller.poll(procs)
        roller.poll(procs)
        assert [name for name, _ in booted] == ["worker-1", "worker-2"] and rollout.load(lay).phase == rollout.DONE
        assert not state["head"].exists(), "the head keeps the job"
        assert any("rolled 2 node(s)" in e for e in events), events
    finally:
        shutil.rmtree(lay.directory)


# --- end to end, as root --------------------------------------------------------------------------------------


def checkout_copy(into: Path) -> Path:
    """This checkout's tracked files (what a user has), run from there by the same Python."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for name in filter(None, files.split("\0")):
        if (ROOT / name).is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, into / name)
    return into


@needs_root
def test_fleet_up_after_a_code_change_rolls_the_workers_one_at_a_time_while_the_job_goes_on(tmp_path):
    steps = 2500  # about 3.5 minutes of job here (2026-12-03: 4,000 steps took 384 s); the roll (about 50 s a
    # worker, 100 s for both) ends well before the job
    checkout = checkout_copy(tmp_path / "checkout")
    path = stack(tmp_path, f"lr-roll-{os.getpid()}", job=JOB | {"steps": steps, "checkpointEvery": 1000})
    fleet = [sys.executable, "-m", "fleet"]
    env = os.environ | {"PYTHONPATH": str(checkout)}
    lay = layout.layout(spec_and_plan(resolve(None, str(path)))[1])
    first = subprocess.Popen([*fleet, "up", "--stack-file", str(path), "--json"], cwd=checkout, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while not (progress.steps(lay) and progress.steps(lay)[-1].step >= 5):
            assert first.poll() is None and time.time() < deadline, first.communicate()
            time.sleep(0.5)
        marker = f"# changed for the rollout drill {os.getpid()}\n"
        with open(checkout / "training" / "__init__.py", "a") as code:
            code.write(marker)
        second = subprocess.run([*fleet, "up", "--stack-file", str(path), "--json"], cwd=checkout, env=env,
                                capture_output=True, text=True, timeout=400)
        assert second.returncode == 0, second.stderr
        roll = json.loads(second.stdout)
        out, err = first.communicate(timeout=600)
        assert first.returncode == 0, err
        job = json.loads(out.splitlines()[-1])
        rolled = roll["rolled"]
        assert [r["node"] for r in rolled] == ["worker-1", "worker-2"] and roll["held"] == ["head"], roll
        assert rolled[1]["left_s"] > rolled[0]["rejoined_s"], f"two workers out at once: {rolled}"
        new = roll["code_sha256"]
        for node in ("worker-1", "worker-2"):
            assert f"{node} left after its rollout notice (checkpoint written" in "\n".join(job["events"]), job
            code = lay.node(node).root / f"var/lib/gpufleet/code/{new}/training/__init__.py"
            assert code.read_text().endswith(marker), f"{node} does not run the new bundle"
        assert not (lay.node("head").root / f"var/lib/gpufleet/code/{new}").exists(), "the head keeps the job's"
        # The job went on: one job to its last step, every step trained once.
        head_log = lay.node("head").log.read_text(errors="replace").splitlines()
        runs = [json.loads(line) for line in head_log if line.startswith('{"steps_completed"')]
        assert job["steps_completed"] == steps and job["nodes"] == 3, job
        assert sum(run["steps_this_run"] for run in runs) == steps, f"a step lost or repeated: {runs}"
        assert sorted(s.step for s in progress.steps(lay)) == list(range(1, steps + 1)), "every step logged once"
        assert job["segments"] == [[1, steps]], job["segments"]
        print(json.dumps({"roll": roll, "job_seconds": job["seconds_total"], "job_runs": len(runs)}))
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
        subprocess.run([*fleet, "down", "--stack-file", str(path)], cwd=checkout, env=env, capture_output=True)
