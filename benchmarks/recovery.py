"""Recovery on the local cluster (CPU): a worker node killed at a random step, a spot notice, a network cut; for each,
the seconds from the fault to the next step the re-formed job completes and the steps lost (completed, then trained
again), beside today's path (the commit given by --today, run from a git worktree of it) measured in the same run,
and the sequence audit. Prints one JSON object.

    sudo .venv/bin/python benchmarks/recovery.py [--today a85d7ac] [--faults kill,spot,cut] [--seed 1]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fleet.stacks import resolve, spec_and_plan  # noqa: E402
from here.local import layout, network, progress  # noqa: E402

STEPS, EVERY, GLOBAL_BATCH = 120, 20, 16
JOB = {"model": "tiny", "seqLen": 128, "globalBatch": GLOBAL_BATCH, "microBatch": 4, "logEvery": 1,
       "steps": STEPS, "checkpointEvery": EVERY}
STALL_LIMIT_S = 150  # a path with no step this long after the fault is reported as such and ended


def stack(directory: Path, name: str, fault: str, ids: Path) -> Path:
    body = {"cloud": "local", "instanceType": "cpu", "nodes": {"min": 1, "desired": 2, "max": 2},
            "network": {"vpcCidr": "10.77.0.0/24"}, "job": JOB | {"sequenceLog": str(ids)}}
    if fault == "spot":
        body["market"] = {"spotPercent": 100}
    path = directory / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": {"gpufleet:cluster": body}}))
    return path


def audit(ids: Path, completed: collections.Counter) -> dict:
    """Every sequence trained once: each of the run's sequences logged, and a sequence logged more than once only
    where its step was in flight at the fault (never completed before it was trained again)."""
    seen: collections.Counter = collections.Counter()
    steps_of: dict[int, int] = {}
    for path in ids.glob("rank-*.jsonl"):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            for i in row["ids"]:
                seen[i] += 1
                steps_of[i] = row["step"] + 1
    wanted = set(range(STEPS * GLOBAL_BATCH))
    repeated = [i for i, n in seen.items() if n > 1 and completed[steps_of[i]] > 1]
    return {"skipped": len(wanted - set(seen)), "outside": len(set(seen) - wanted), "trained_twice": len(repeated),
            "clean": wanted == set(seen) and not repeated}


def drill(fleet: list[str], cwd: Path, path: Path, fault: str, lay: layout.Layout) -> None:
    if fault == "cut":  # done here, so the commit before `fleet drill cut` existed is cut the same way
        (lay.directory / "cut").mkdir(parents=True, exist_ok=True)
        (lay.directory / "cut" / "worker-1").touch()
        network.cut(lay, lay.node("worker-1"))
        return
    subprocess.run([*fleet, "drill", "--stack-file", str(path), fault, "worker-1"], cwd=cwd, check=True,
                   capture_output=True)


def one(code: Path, fault: str, at: int, work: Path) -> dict:
    """One run of the job with ``code``: the fault at step ``at``, then to the end."""
    name = f"rc-{fault}-{os.getpid()}"
    ids = work / f"{code.name}-{fault}-ids"
    path = stack(work, name, fault, ids)
    lay = layout.layout(spec_and_plan(resolve(None, str(path)))[1])
    fleet = [sys.executable, "-m", "fleet"]
    proc = subprocess.Popen([*fleet, "up", "--stack-file", str(path), "--json"], cwd=code, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        while not (history := progress.steps(lay)) or history[-1].step < at:
            if proc.poll() is not None:
                raise SystemExit(proc.communicate()[1])
            time.sleep(0.1)
        fault_at, fault_step = time.time(), history[-1].step
        drill(fleet, code, path, fault, lay)
        try:
            out, err = proc.communicate(timeout=STALL_LIMIT_S + 120)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        history = progress.steps(lay)
        head_log = (lay.directory / "nodes" / "head.log").read_text(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        subprocess.run([*fleet, "down", "--stack-file", str(path)], cwd=code, capture_output=True)
    before = [s for s in history if s.time <= fault_at][-1:]
    after = [s for s in history if s.time > fault_at]
    # The re-formed job's first step ends the longest pause after the fault (steps a spot node's job still takes
    # before it stops are progress, not recovery).
    gaps = [(b.time - a.time, b) for a, b in zip(before + after, after, strict=False)]
    stall, resumed = max(gaps, key=lambda g: g[0], default=(None, None))
    completed = collections.Counter(s.step for s in history)
    summary = json.loads(out.splitlines()[-1]) if proc.returncode == 0 and out.strip() else {}
    return {
        "fault_step": fault_step,
        "seconds_fault_to_next_step": round(resumed.time - fault_at, 2) if resumed else None,
        "stall_s": round(stall, 2) if stall is not None else None,
        "steps_lost": sum(1 for n in completed.values() if n > 1),
        "steps_completed": summary.get("steps_completed", max(completed, default=0)),
        "finished": proc.returncode == 0,
        "events": summary.get("events", []),
        "audit": audit(ids, completed) if ids.is_dir() else None,
        "from_memory": "going on from the memory" in head_log,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--today", default="a85d7ac", help="the commit whose recovery is today's path")
    parser.add_argument("--faults", default="kill,spot,cut")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    results: dict = {"steps": STEPS, "checkpoint_every": EVERY, "faults": {}}
    with tempfile.TemporaryDirectory(prefix="gpufleet-recovery-") as tmp:
        work, today = Path(tmp), Path(tmp) / "today"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(today), args.today], check=True,
                       capture_output=True)
        try:
            for fault in args.faults.split(","):
                at = rng.randrange(25, 60)
                results["faults"][fault] = {"at_step": at, "new": one(ROOT, fault, at, work),
                                            "today": one(today, fault, at, work)}
                print(json.dumps({fault: results["faults"][fault]}), file=sys.stderr, flush=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(today)], capture_output=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
