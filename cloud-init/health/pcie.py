"""PCIe link of every GPU: the generation and width it trained to against the most the GPU and its slot support.

A GPU seated at x8 or trained down to gen 3 moves host data at a fraction of the rate and still passes a GPU count.
The link drops to a lower generation while a GPU idles (power saving), so the gate samples it while the matmul check
keeps every GPU busy; nvidia-smi's `.max` fields are the most the GPU and the system together allow.
"""

from __future__ import annotations

from health.result import Check, judge, skipped

FIELDS = ("index", "pcie.link.gen.current", "pcie.link.gen.max", "pcie.link.width.current", "pcie.link.width.max")


def checks(samples: list[dict]) -> list[Check]:
    """Two rows per GPU (generation, width), each held to its own maximum; skipped where the driver reports neither
    (some virtual GPUs)."""
    found = []
    for gpu in samples:
        subject = f"gpu{gpu['index']}"
        for name, unit in (("gen", "gen"), ("width", "lanes")):
            current, best = gpu[f"pcie.link.{name}.current"], gpu[f"pcie.link.{name}.max"]
            if current is None or best is None:
                found.append(skipped(f"pcie-{name}", subject, "not reported by nvidia-smi"))
                continue
            current, best = float(current), float(best)
            found.append(judge(f"pcie-{name}", subject, current, unit, best, ">=", f"{current:g} of {best:g}"))
    return found
