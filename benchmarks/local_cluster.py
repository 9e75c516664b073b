"""Time to first training step and total time of the default local run (`fleet up --stack local`), against a plain
single-process `python -m training.train` of the same job measured in the same run. Prints one JSON object.

    sudo .venv/bin/python benchmarks/local_cluster.py [--stack local]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fleet.stacks import resolve, spec_and_plan  # noqa: E402
from spec.jobs import JobSettings, job_args  # noqa: E402


def plain(job: JobSettings) -> dict:
    """The same job in one process: seconds to its first logged step and in all, both from process start."""
    args = job_args(job.model_dump(exclude_unset=True))
    with tempfile.TemporaryDirectory() as run_dir:
        started = time.time()
        subprocess.run([sys.executable, "-m", "training.train", *args, f"--run-dir={run_dir}", "--progress=false"],
                       cwd=ROOT, check=True, capture_output=True)
        total = time.time() - started
        first = json.loads((Path(run_dir) / "metrics.jsonl").read_text().splitlines()[0])
    return {"seconds_to_first_step": round(first["time"] - started, 2), "seconds_total": round(total, 2)}


def cluster(stack: str) -> dict:
    """`fleet up` as a user runs it (after `fleet down`), wall time of the whole command included."""
    fleet = [sys.executable, "-m", "fleet"]
    subprocess.run([*fleet, "down", "--stack", stack], cwd=ROOT, capture_output=True)
    started = time.time()
    result = subprocess.run([*fleet, "up", "--stack", stack, "--json"], cwd=ROOT, capture_output=True, text=True)
    wall = time.time() - started
    subprocess.run([*fleet, "down", "--stack", stack], cwd=ROOT, capture_output=True)
    if result.returncode != 0:
        raise SystemExit(result.stderr)
    summary = json.loads(result.stdout)
    return {"seconds_to_first_step": summary["seconds_to_first_step"], "seconds_total": summary["seconds_total"],
            "seconds_command": round(wall, 2), "mode": summary["mode"], "nodes": summary["nodes"],
            "ranks": summary["ranks"], "steps_completed": summary["steps_completed"],
            "tokens_per_s": round(summary["tokens_per_s"]), "final_loss": summary["final_loss"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="local")
    stack = parser.parse_args().stack
    spec, _ = spec_and_plan(resolve(stack, None))
    base, local = plain(spec.job), cluster(stack)
    print(json.dumps({
        "stack": stack, "plain": base, "cluster": local,
        "ratio_first_step": round(local["seconds_to_first_step"] / base["seconds_to_first_step"], 2),
        "ratio_total": round(local["seconds_total"] / base["seconds_total"], 2),
        "targets": {"first_step_under_s": 20, "total_under_s": 60},
    }))


if __name__ == "__main__":
    main()
