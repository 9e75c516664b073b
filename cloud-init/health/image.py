"""A baked node image held to the node plan: at the end of a bake (`fleet image build`), `record` writes the matrix
the image now holds (node.json's image_matrix: driver, fabric manager, fabric stack, CUDA, the job's packages, the
node's tools, the monitor's packages and images) to /etc/gpufleet/image.json; a node booted from a baked image runs
`check` first in its gate and fails for good when a part differs, naming it: every replacement would boot the same
image.

    python -m health.image record|check --config /etc/gpufleet/node.json --image /etc/gpufleet/image.json \\
        [--reason-file /run/gpufleet/failure]

Exit 0: recorded, or the image holds the plan's matrix; 1: it does not (the reason, e.g.
"image:pip:baked=torch==2.12.0:planned=torch==2.13.0", goes to the reason file); 2: bad arguments. Standard library
only: the bake runs it before any venv exists.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

LISTS = ("pip", "tools", "monitor-packages", "monitor-images")  # parts that are lists: a difference names the items


def planned_matrix(config: Path) -> dict[str, str]:
    """The matrix the node plan asks for, part -> version."""
    return dict(json.loads(config.read_text())["image_matrix"])


def record(config: Path, image: Path) -> None:
    image.parent.mkdir(parents=True, exist_ok=True)
    image.write_text(json.dumps({"matrix": planned_matrix(config)}, indent=2, sort_keys=True) + "\n")


def _differs(part: str, baked: str, planned: str) -> str:
    """One part's difference; for package lists only the packages that differ, so the reason stays short."""
    if part in LISTS:
        baked_set, planned_set = set(baked.split()), set(planned.split())
        baked, planned = " ".join(sorted(baked_set - planned_set)), " ".join(sorted(planned_set - baked_set))
    return f"image:{part}:baked={baked or '-'}:planned={planned or '-'}"


def differences(baked: dict[str, str], planned: dict[str, str]) -> list[str]:
    """Every part of the plan's matrix the image does not hold as planned, in the plan's order."""
    return [_differs(part, baked.get(part, ""), want) for part, want in planned.items() if baked.get(part) != want]


def check(config: Path, image: Path) -> list[str]:
    """The reasons the image is not the one planned; [] when it is."""
    if not image.is_file():
        return [f"image:unbaked:{image}"]
    return differences(json.loads(image.read_text())["matrix"], planned_matrix(config))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m health.image", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("record", "check"))
    parser.add_argument("--config", type=Path, required=True, help="the node plan, node.json")
    parser.add_argument("--image", type=Path, required=True, help="the image's recorded matrix, image.json")
    parser.add_argument("--reason-file", type=Path, help="where `check` writes the first reason")
    args = parser.parse_args(argv)
    if args.action == "record":
        record(args.config, args.image)
        return 0
    reasons = check(args.config, args.image)
    for reason in reasons:
        print(f"the baked image differs from the plan: {reason}", file=sys.stderr)
    if reasons and args.reason_file:
        args.reason_file.write_text(reasons[0] + "\n")
    return 1 if reasons else 0


if __name__ == "__main__":
    raise SystemExit(main())
