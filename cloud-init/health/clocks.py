"""Why each GPU's clocks are held back, sampled while the matmul check keeps it busy.

NVML's clock event reasons are a bitmask (DCGM 4.6 dcgmlib/dcgm_fields.h, DCGM_CLOCKS_EVENT_REASON_*). Some are a
healthy GPU at work: idle, an applications-clocks setting, the software power cap (an H200 under a sustained matmul
runs at its 700 W limit), sync boost, a display clock. The others say the hardware or the cooling is failing: those
fail the check. A GPU merely slower than its peers is the matmul check's to find.
"""

from __future__ import annotations

from health.result import Check, judge, skipped

FIELDS = ("index", "clocks_throttle_reasons.active", "clocks.sm", "clocks.max.sm")
REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
FAULTS = 0x8 | 0x20 | 0x40 | 0x80
"""HW slowdown (clocks halved or worse: too hot, power brake, bad power supply), SW and HW thermal slowdown, HW power
brake (the system asserted it)."""


def names(mask: int) -> list[str]:
    return [name for bit, name in REASONS.items() if mask & bit] + ([f"0x{mask & ~sum(REASONS):x}"]
                                                                     if mask & ~sum(REASONS) else [])


def checks(samples: list[dict]) -> list[Check]:
    """One row per GPU: the fault bits among the active reasons (0 passes), the clock and every reason in the detail."""
    found = []
    for gpu in samples:
        subject, active = f"gpu{gpu['index']}", gpu["clocks_throttle_reasons.active"]
        if active is None:
            found.append(skipped("clocks", subject, "clock event reasons not reported by nvidia-smi"))
            continue
        mask = int(active, 16)
        clock = f"SM clock {gpu['clocks.sm']} of {gpu['clocks.max.sm']} MHz"
        detail = f"active: {', '.join(names(mask)) or 'none'}; {clock}"
        found.append(judge("clocks", subject, float(mask & FAULTS), "bitmask", 0.0, "<=", detail))
    return found
