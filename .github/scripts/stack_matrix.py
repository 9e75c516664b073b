"""Print the shipped cloud stacks as a JSON matrix (`[{"stack": ..., "cloud": ...}]`) for GitHub Actions.

The local stack runs on the runner itself (`fleet up`), so it has no live preview and is left out.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

CLUSTER_KEY = "gpufleet:cluster"


def matrix(project: Path) -> list[dict[str, str]]:
    rows = []
    for path in sorted(project.glob("stacks/Pulumi.*.yaml")):
        cluster = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("config", {}).get(CLUSTER_KEY, {})
        cloud = cluster.get("cloud") if isinstance(cluster, dict) else None
        if cloud and cloud != "local":
            rows.append({"stack": path.name.removeprefix("Pulumi.").removesuffix(".yaml"), "cloud": cloud})
    return rows


if __name__ == "__main__":
    print(json.dumps(matrix(Path(sys.argv[1] if len(sys.argv) > 1 else "."))))
