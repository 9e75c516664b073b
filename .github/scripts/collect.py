"""Run `fleet plan --json`, `fleet plan --diagram` and `fleet cost --json` for every stack of one checkout.

Used on the pull request's branch and on its base: each checkout runs its own code (`python -m fleet` from the
checkout), so a base without a command simply has no file for it. Writes OUT/<stack>.{plan.json,diagram.md,cost.json}
and OUT/status.json ({stack: plan exit code}).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

RUNS = {"plan.json": ["plan", "--json"], "diagram.md": ["plan", "--diagram"], "cost.json": ["cost", "--json"]}


def collect(project: Path, out: Path) -> dict[str, int]:
    out.mkdir(parents=True, exist_ok=True)
    status = {}
    for path in sorted(project.glob("stacks/Pulumi.*.yaml")):
        stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
        for suffix, command in RUNS.items():
            done = subprocess.run([sys.executable, "-m", "fleet", *command, "--stack", stack], cwd=project,
                                  capture_output=True, text=True, check=False)
            if done.returncode in (0, 1) and done.stdout.strip():
                (out / f"{stack}.{suffix}").write_text(done.stdout, encoding="utf-8")
            else:
                print(f"{project}: fleet {' '.join(command)} --stack {stack}: exit {done.returncode}\n{done.stderr}",
                      file=sys.stderr)
            if suffix == "plan.json":
                status[stack] = done.returncode
    (out / "status.json").write_text(json.dumps(status, indent=2), encoding="utf-8")
    return status


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--project", type=Path, default=Path("."))
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    collect(args.project.resolve(), args.out.resolve())
