"""Preview time against cluster size: `python benchmarks/preview.py` prints JSON.

Each size is previewed through the real program under mocks (warm, median of 5) and once cold as users run it
(`python -m fleet plan --json` in a fresh process). The baseline is the same harness on the local stack, which
declares no cloud resources: the ratios show what the AWS graph adds on top of the mock runtime itself.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fleet.preview import run_program  # noqa: E402
from spec.stackfile import load_stack_file  # noqa: E402

SIZES = (8, 64, 512)


def stack_file(directory: Path, nodes: int) -> Path:
    cluster = {"cloud": "aws", "zone": "us-east-1a", "instanceType": "p5.48xlarge",
               "nodes": {"min": 1, "desired": nodes, "max": nodes},
               "market": {"onDemandBase": 1, "spotPercent": 50},
               "job": {"microBatch": 1, "globalBatch": 8 * nodes}}
    path = directory / f"Pulumi.bench-{nodes}.yaml"
    path.write_text(yaml.safe_dump({"config": {"aws:region": "us-east-1", "gpufleet:cluster": cluster}}))
    return path


def warm(path: Path, runs: int = 5) -> tuple[float, int]:
    stack = load_stack_file(path)
    times, count = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        count = len(run_program(stack).resources)
        times.append(time.perf_counter() - start)
    return statistics.median(times), count


def cold(path: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "fleet", "plan", "--stack-file", str(path), "--json"], cwd=ROOT,
                   check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    baseline, _ = warm(ROOT / "stacks" / "Pulumi.local.yaml")
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for nodes in SIZES:
            path = stack_file(Path(directory), nodes)
            seconds, resources = warm(path)
            rows.append({"nodes": nodes, "resources": resources, "warm_s": round(seconds, 3),
                         "warm_vs_baseline": round(seconds / baseline, 1), "cold_cli_s": round(cold(path), 2)})
    print(json.dumps({"baseline_local_stack_warm_s": round(baseline, 4), "sizes": rows}, indent=2))


if __name__ == "__main__":
    main()
