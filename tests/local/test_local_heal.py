"""`fleet heal` on the local cluster, end to end (issue 31): a worker's machine is killed, the head's job re-forms
without it and goes on; `fleet heal` sees the ended machine and has the running `fleet up` boot the worker anew; the
job re-forms on both nodes and completes, every step trained (at most the one in flight at the kill again)."""

from __future__ import annotations

from test_local_cluster import JOB, cluster, fleet, needs_root  # noqa: F401  (the fixture)

from here.local import progress


@needs_root
def test_fleet_heal_brings_a_killed_worker_back_while_the_job_goes_on(cluster):  # noqa: F811
    steps = 240
    c = cluster("lt-heal", nodes={"min": 1, "desired": 2, "max": 2},
                job=JOB | {"steps": steps, "checkpointEvery": 50})
    c.start()
    c.wait_for_step(20)
    c.drill("kill", "worker-1")
    c.wait_for_log("head", "recovery: going on from the memory", timeout=60)
    healed = fleet("heal", "--stack-file", str(c.path))
    assert healed.returncode == 0, healed.stderr
    assert "replacing worker-1: its instance is ended" in healed.stdout, healed.stdout
    summary = c.finish()
    events = summary["events"]
    assert any("worker-1 was lost" in e for e in events), events
    assert any("worker-1 booted again" in e for e in events), events
    assert (summary["steps_completed"], summary["nodes"], summary["ranks"]) == (steps, 2, 4), summary
    # Each run of the job prints its summary when it ends: the one on the head alone (the kill re-formed the job in
    # memory, issue 33) ended when the healed worker joined, and the last ran on both nodes again.
    worlds = [run["world_size"] for run in c.job_runs("head")]
    assert 2 in worlds and worlds[-1] == 4, f"the healed worker rejoined: {worlds}"
    counted = [s.step for s in progress.steps(c.lay)]
    assert sorted(set(counted)) == list(range(1, steps + 1)), "every step trained"
    assert len(counted) - len(set(counted)) <= 1, "at most the step in flight at the kill trained again"
    # Nothing left to heal once it runs again; the head is the job's: never replaced.
    again = fleet("heal", "--stack-file", str(c.path))
    assert again.returncode == 2 and "is not running" in again.stderr, "the cluster ended with its job"
