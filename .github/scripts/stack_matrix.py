"""Print the shipped cloud stacks as a JSON matrix (`[{"stack": ..., "cloud": ...}]`) for GitHub Actions.

The local stack runs on the runner itself (`fleet up`), so it has no live preview and is left out. With `--runners`
(the deploy, heal and drift workflows, which run the project's `python -m fleet`) each row also carries the labels of
the runner the stack's plan says its pipeline runs on (`fleet plan --json`, "pipeline": GitHub's own, or a
self-hosted one inside the cloud region's network: docs/gitops.md, "Where the pipeline runs").
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

CLUSTER_KEY = "gpufleet:cluster"


def runner(project: Path, stack: str) -> list[str]:
    """The runner labels the stack's plan names (exit 1, a mandatory policy finding, still prints the plan)."""
    done = subprocess.run([sys.executable, "-m", "fleet", "plan", "--json", "--stack", stack], cwd=project,
                          capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"fleet plan --stack {stack}: exit {done.returncode}\n{done.stderr}")
    return json.loads(done.stdout)["pipeline"]["runner"]


def matrix(project: Path, runner_of: Callable[[Path, str], list[str]] | None = None) -> list[dict]:
    rows = []
    for path in sorted(project.glob("stacks/Pulumi.*.yaml")):
        cluster = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("config", {}).get(CLUSTER_KEY, {})
        cloud = cluster.get("cloud") if isinstance(cluster, dict) else None
        if cloud and cloud != "local":
            stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
            rows.append({"stack": stack, "cloud": cloud} | ({"runner": runner_of(project, stack)} if runner_of else {}))
    return rows


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if a != "--runners"]
    print(json.dumps(matrix(Path(arguments[0] if arguments else "."), runner if "--runners" in sys.argv else None)))
