"""Memory and driver errors per GPU: uncorrectable ECC errors since the driver loaded, pages waiting to be retired,
rows waiting to be remapped or that could not be, and Xid events in the kernel log.

At boot nothing but the gate has run on the GPUs, so any Xid is the hardware's or the driver's, not a program's: each
fails its GPU (the codes are in the detail). A pending retirement or remap needs a GPU reset; a remap failure means
the memory is out of spare rows: the node is replaced either way.
"""

from __future__ import annotations

import re

from health import tools
from health.result import Check, judge, skipped

FIELDS = ("index", "pci.bus_id", "ecc.errors.uncorrected.volatile.total", "retired_pages.pending")
REMAP_FIELDS = ("gpu_bus_id", "remapped_rows.pending", "remapped_rows.failure")
# NVIDIA's driver logs "NVRM: Xid (PCI:0000:53:00): 79, pid=..., GPU has fallen off the bus."
XID = re.compile(r"NVRM: Xid \(PCI:([0-9a-fA-F]+:[0-9a-fA-F]+:[0-9a-fA-F]+)[^)]*\): (\d+)")


def xids(kernel_log: str) -> dict[tuple[int, int, int], list[int]]:
    """Xid codes per PCI address, in the order the kernel logged them."""
    found: dict[tuple[int, int, int], list[int]] = {}
    for address, code in XID.findall(kernel_log):
        found.setdefault(tools.bus_key(address), []).append(int(code))
    return found


def checks(gpus: list[dict], remaps: list[dict] | None, kernel_log: str | None) -> list[Check]:
    """Rows per GPU: uncorrectable ECC errors, pending page retirement, pending and failed row remapping, Xids;
    ``remaps`` None where the GPU has no row remapping (before Ampere), ``kernel_log`` None where dmesg was not
    readable. An Xid on an address that is no GPU nvidia-smi lists still fails (a GPU that fell off the bus)."""
    found = []
    remap_by_bus = {tools.bus_key(r["gpu_bus_id"]): r for r in remaps or []}
    events = xids(kernel_log) if kernel_log is not None else {}
    for gpu in gpus:
        subject, bus = f"gpu{gpu['index']}", tools.bus_key(gpu["pci.bus_id"])
        ecc = tools.flag(gpu["ecc.errors.uncorrected.volatile.total"])
        found.append(skipped("ecc", subject, "ECC off or not reported") if ecc is None else
                     judge("ecc", subject, float(ecc), "errors", 0.0, "<=", "uncorrectable, since the driver loaded"))
        retire = tools.flag(gpu["retired_pages.pending"])
        if retire is not None:  # GPUs with row remapping (Ampere and later) report no page retirement
            found.append(judge("retired-pages", subject, float(retire), "pending", 0.0, "<=", "needs a GPU reset"))
        remap = remap_by_bus.get(bus)
        if remap is not None:
            for column, why in (("pending", "needs a GPU reset"), ("failure", "no spare rows left")):
                count = tools.flag(remap[f"remapped_rows.{column}"])
                if count is not None:
                    found.append(judge(f"row-remap-{column}", subject, float(count), "rows", 0.0, "<=", why))
        if kernel_log is not None:
            codes = events.pop(bus, [])
            found.append(judge("xid", subject, float(len(codes)), "events", 0.0, "<=",
                               f"Xid {', '.join(map(str, codes))}" if codes else "none in the kernel log"))
    for bus, codes in events.items():
        address = f"{bus[0]:04x}:{bus[1]:02x}:{bus[2]:02x}"
        found.append(judge("xid", f"pci:{address}", float(len(codes)), "events", 0.0, "<=",
                           f"Xid {', '.join(map(str, codes))} on a PCI address nvidia-smi does not list"))
    if kernel_log is None:
        found.append(skipped("xid", "node", "the kernel log is not readable (dmesg)"))
    return found
