"""What a hostile or broken stack file costs the loader: `python benchmarks/stackfile.py` prints JSON.

Each file is loaded through `spec.stackfile.load_stack_file` (median of 5, with tracemalloc's peak), refused or
not. The baseline is a shipped stack: the ratios show that an 800-byte alias bomb, a file at the size bound and one
nested past the depth bound cost about what a normal stack does, instead of the minutes and gigabytes of expanding them.
"""

from __future__ import annotations

import contextlib
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spec.errors import SpecError  # noqa: E402
from spec.stackfile import MAX_BYTES, load_stack_file  # noqa: E402


def alias_bomb(levels: int = 9) -> str:
    """The classic billion laughs: nine lists of nine aliases to the level below, 9**levels values expanded."""
    rows = ['  l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    rows += [f"  l{n}: &l{n} [{','.join([f'*l{n - 1}'] * 9)}]" for n in range(1, levels)]
    return "config:\n" + "\n".join(rows) + f"\n  gpufleet:cluster: {{cloud: local, tags: {{x: *l{levels - 1}}}}}\n"


def cases(directory: Path) -> dict[str, Path]:
    files = {
        "alias bomb": alias_bomb(),
        "at the size bound": "config:\n" + "# padding\n" * (MAX_BYTES // 10 - 1),
        "nested past the depth bound": "config:\n  a: " + "[" * 5000 + "]" * 5000 + "\n",
    }
    paths = {"shipped stack (baseline)": ROOT / "stacks" / "Pulumi.aws-p5.yaml"}
    for name, text in files.items():
        path = directory / f"Pulumi.{name.replace(' ', '-')}.yaml"
        path.write_text(text)
        paths[name] = path
    return paths


def measure(path: Path, runs: int = 5) -> dict[str, object]:
    times, outcome = [], ""
    for _ in range(runs):
        start = time.perf_counter()
        try:
            load_stack_file(path)
            outcome = "loaded"
        except SpecError as error:
            outcome = error.problems[0].message
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    with contextlib.suppress(SpecError):
        load_stack_file(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"bytes": path.stat().st_size, "seconds": round(statistics.median(times), 4),
            "peak_mib": round(peak / 2**20, 2), "outcome": outcome}


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        results = {name: measure(path) for name, path in cases(Path(directory)).items()}
    base = results["shipped stack (baseline)"]
    for result in results.values():
        result["time_ratio"] = round(result["seconds"] / base["seconds"], 1)
        result["memory_ratio"] = round(result["peak_mib"] / max(base["peak_mib"], 0.01), 1)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
