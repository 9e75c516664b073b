"""What every check reports and how a report leaves the node: one JSON file a person or `fleet health` reads, one
node-exporter textfile Prometheus scrapes, an exit code and a one-line reason the node scripts act on.

A check yields rows (`Check`): one figure per subject (a GPU, a pair of GPUs, the node, a pair of nodes), the
threshold it was held to and the rule, and whether it passed. A row without a threshold is reported, not judged; a
row whose figure could not be measured fails (a GPU that cannot run a matmul is not healthy), except where the tool
that would measure it is absent (`skipped`).
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

SCHEMA = 1
EXIT_OK = 0
EXIT_UNHEALTHY = 1
"""A check failed: the node scripts report the node (gpufleet-report: metric, tag, the group's unhealthy path)."""
EXIT_USAGE = 2
"""The command line or the config file is wrong; nothing was measured."""

RULES = {">=": lambda figure, limit: figure >= limit, "<=": lambda figure, limit: figure <= limit,
         "==": lambda figure, limit: figure == limit}  # fmt: skip
SKIP = "skip"
# What gpufleet-report keeps of a reason (it turns anything else into "_"): tag values and label values stay clean.
_REASON_UNSAFE = re.compile(r"[^A-Za-z0-9_.:/=+@-]")


@dataclass(frozen=True)
class Check:
    """One judged figure. ``rule`` reads "figure RULE threshold must hold", e.g. ">=" for a bandwidth."""

    check: str
    subject: str
    figure: float | None
    unit: str
    threshold: float | None
    rule: str
    ok: bool
    detail: str = ""


def judge(check: str, subject: str, figure: float | None, unit: str, threshold: float | None, rule: str = ">=",
          detail: str = "") -> Check:
    """The row for a measured figure: failed when it could not be measured or breaks the rule, passed without a
    threshold."""
    if figure is None:
        ok = False
    elif threshold is None:
        ok = True
    else:
        ok = RULES[rule](figure, threshold)
    return Check(check, subject, figure, unit, threshold, rule, ok, detail)


def skipped(check: str, subject: str, why: str) -> Check:
    """A check that does not apply here or whose tool is absent (no dcgmi, one GPU): reported, never failed."""
    return Check(check, subject, None, "", None, SKIP, True, why)


def failed(check: str, subject: str, why: str) -> Check:
    """A check that could not run where it should have (a CUDA error, a tool that crashed)."""
    return Check(check, subject, None, "", None, SKIP, False, why)


@dataclass
class Report:
    """One run of the node gate or of the cluster acceptance, as this node saw it. ``ok`` is this node's verdict:
    every row for the gate; for the acceptance, whether this node was named (another node's failed row is shown but
    does not fail this one)."""

    kind: str  # "gate" | "acceptance"
    node: str  # this node's hostname
    level: str  # "light" | "deep"
    ok: bool
    started: float  # unix seconds
    duration_s: float
    checks: list[Check] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # seconds per check family, in the order they ran
    schema: int = SCHEMA

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    def reason(self) -> str:
        """The first failed row (this node's own row first) in one short token for gpufleet-report, e.g.
        "matmul:gpu3=412.3:min=593.4"."""
        if self.ok:
            return ""
        mine = [c for c in self.failed if c.subject == self.node] or self.failed
        if not mine:
            return f"{self.kind}:failed"
        first = mine[0]
        text = f"{first.check}:{first.subject}"
        if first.figure is not None:
            text += f"={first.figure:g}"
        if first.threshold is not None:
            text += {">=": ":min=", "<=": ":max=", "==": ":want="}[first.rule] + f"{first.threshold:g}"
        elif first.figure is None:
            text += ":" + (first.detail.split(":")[0] or "error")
        return _REASON_UNSAFE.sub("_", text)[:200]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> Report:
        raw = json.loads(text)
        raw["checks"] = [Check(**row) for row in raw.get("checks", [])]
        return cls(**raw)


def timed_report(kind: str, node: str, level: str, started: float, checks: list[Check], ok: bool | None = None
                 ) -> Report:
    """A report that ends now; ``ok`` defaults to every row passing."""
    verdict = all(c.ok for c in checks) if ok is None else ok
    return Report(kind, node, level, verdict, started, round(time.time() - started, 3), checks)


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


# One HELP text per family: node exporter merges the families of its textfiles only when their HELP texts agree.
_FAMILIES = {
    "gpufleet_health_figure": "What a gpufleet health check measured (unit in the label).",
    "gpufleet_health_threshold": "The threshold a gpufleet health check held its figure to.",
    "gpufleet_health_check_ok": "1 when a gpufleet health check passed, 0 when it failed.",
    "gpufleet_health_ok": "1 when this node passed the gpufleet health gate or acceptance test.",
    "gpufleet_health_duration_seconds": "How long the gpufleet health gate or acceptance test ran.",
    "gpufleet_health_timestamp_seconds": "When the gpufleet health gate or acceptance test ran (unix time).",
}


def prometheus(report: Report) -> str:
    """The report as node-exporter textfile metrics (one file per kind; see _FAMILIES)."""
    samples: dict[str, list[str]] = {name: [] for name in _FAMILIES}
    for c in report.checks:
        labels = f'kind="{report.kind}",check="{_label(c.check)}",subject="{_label(c.subject)}"'
        if c.figure is not None:
            samples["gpufleet_health_figure"].append(f'{{{labels},unit="{_label(c.unit)}"}} {c.figure:g}')
        if c.threshold is not None:
            samples["gpufleet_health_threshold"].append(
                f'{{{labels},unit="{_label(c.unit)}",rule="{_label(c.rule)}"}} {c.threshold:g}')
        samples["gpufleet_health_check_ok"].append(f"{{{labels}}} {int(c.ok)}")
    whole = f'{{kind="{report.kind}",level="{_label(report.level)}"}}'
    samples["gpufleet_health_ok"].append(f"{whole} {int(report.ok)}")
    samples["gpufleet_health_duration_seconds"].append(f"{whole} {report.duration_s:g}")
    samples["gpufleet_health_timestamp_seconds"].append(f"{whole} {report.started:.0f}")
    lines = []
    for name, help_text in _FAMILIES.items():
        if samples[name]:
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", *(f"{name}{s}" for s in samples[name])]
    return "\n".join(lines) + "\n"


def _atomic_write(path: Path, text: str) -> None:
    """Readers (node exporter, `fleet health`) never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(text)
    partial.replace(path)


def write(report: Report, out: Path | None, metrics: Path | None, reason_file: Path | None) -> int:
    """Write what was asked for; the exit code the node scripts act on."""
    if out:
        _atomic_write(out, report.to_json() + "\n")
    if metrics:
        _atomic_write(metrics, prometheus(report))
    if reason_file:
        if report.ok:
            reason_file.unlink(missing_ok=True)
        else:
            _atomic_write(reason_file, report.reason() + "\n")
    return EXIT_OK if report.ok else EXIT_UNHEALTHY
