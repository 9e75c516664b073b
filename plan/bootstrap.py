"""Node bootstrap: one role's node plan (plan.node.NodePlan) rendered as cloud-init user-data.

`render_user_data` turns a NodePlan into `#cloud-config` text. Its write_files carry only what a node needs to reach
its bucket (and to report when it cannot): the entry script, the bucket copy and report scripts, their shared library,
the node plan twice (node.env for the shell, node.json for Python, both rendered field by field from the dataclass as
plan/node.py describes) and the NCCL env file. Everything else (the other node scripts, the systemd units,
the monitoring config) comes with the content-addressed code bundle (plan.bundle), whose hash user-data names,
so any change still rolls the nodes.
On a cloud, runcmd runs `gpufleet-node install` (bundle -> scripts and units) and enables the units: gate (driver,
fabric, health) -> training, with the spot watcher, the checkpoint sync and the exporters beside it. In local mode
the local cluster's cloud-config installer (here.local.cloudconfig) writes the same files under a node root
and runs `GPUFLEET_ROOT=<root> <root>/opt/gpufleet/bin/gpufleet-node start` (install, gate, training) in the node's
namespace.
No secret is ever rendered: nodes reach buckets and cloud APIs through their instance role.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields, is_dataclass

import jinja2

from plan.node import NodePlan
from plan.paths import PROJECT_ROOT

CLOUD_INIT = PROJECT_ROOT / "cloud-init"
# What user-data carries: enough to fetch the bundle (and report a node that cannot); the rest comes from the bundle.
USER_DATA_SCRIPTS = ("gpufleet-lib.sh", "gpufleet-node", "gpufleet-report", "gpufleet-store")

BIN = "/opt/gpufleet/bin"
ETC = "/etc/gpufleet"
ENTRY = f"{BIN}/gpufleet-node"
# The node's own cloud adapter (cloud-init/clouds/<cloud>.sh), which gpufleet-lib.sh sources.
CLOUD_ADAPTER = f"{BIN}/gpufleet-cloud.sh"
CLOUD_API = f"{BIN}/gpufleet-cloud-api"  # the cloud's API tool (cloud-init/clouds/<cloud>_api.py), where it has one
# One environment for the process: jinja compiles a template once per environment and rechecks the file's mtime on
# each use, so an edited template is still picked up; a new environment per render compiled it every time (three
# quarters of a plan's time).
_TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(CLOUD_INIT),
    keep_trailing_newline=True,
    undefined=jinja2.StrictUndefined,
)


@dataclass(frozen=True)
class NodeFile:
    """One file a node gets through write_files."""

    path: str
    content: bytes
    mode: str = "0644"


def adapter(cloud: str) -> bytes:
    """A cloud's node-script adapter; a cloud without one has no user-data (fail closed)."""
    path = CLOUD_INIT / "clouds" / f"{cloud}.sh"
    if not path.is_file():
        raise FileNotFoundError(f"no node-script adapter for cloud {cloud!r}: add cloud-init/clouds/{cloud}.sh")
    return path.read_bytes()


def _quote(value: object) -> str:
    return "'" + str(value).replace("'", "'\\''") + "'"


def _item(value: object) -> str:
    """One element of a bash array: a (key, value) pair reads KEY=value."""
    return _quote("=".join(map(str, value)) if isinstance(value, tuple) else value)


def shell_value(value: object) -> str:
    """A value as node.env writes it (plan/node.py says how)."""
    if value is None:
        return "''"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (tuple, list)):
        return "(" + " ".join(map(_item, value)) + ")"
    return _quote(value)


def _settings(section: object, prefix: str = "") -> Iterator[tuple[str, object]]:
    """(name, value) of every field, in field order; a nested section's fields carry its name as a prefix."""
    for field in fields(section):
        value = getattr(section, field.name)
        if is_dataclass(value):
            yield from _settings(value, f"{prefix}{field.name}_")
        else:
            yield prefix + field.name, value


def node_env(node: NodePlan) -> str:
    """The node plan as the bash file every node script sources: one GF_<FIELD> line per field."""
    lines = [
        f"# gpufleet settings for {node.cluster} {node.role} nodes; sourced by {BIN}/gpufleet-lib.sh.",
        "# shellcheck disable=SC2034",
        *(f"GF_{name.upper()}={shell_value(value)}" for name, value in _settings(node)),
    ]
    return "\n".join(lines) + "\n"


def node_json(node: NodePlan) -> str:
    """The node plan as the JSON Python on the node reads: the same fields under the same names."""
    return json.dumps(asdict(node), separators=(",", ":")) + "\n"


def nccl_env(node: NodePlan) -> str:
    """The one env file torchrun's workers get NCCL/libfabric settings from (systemd EnvironmentFile= syntax)."""
    lines = [f"# NCCL/fabric env for {node.fabric} ({node.instance_type}), decided by the planner."]
    lines += [f"{key}={shlex.quote(value)}" for key, value in node.nccl_env]
    return "\n".join(lines) + "\n"


def node_files(node: NodePlan) -> list[NodeFile]:
    """The files user-data writes on this role's nodes, in a stable order."""
    files = [
        NodeFile(f"{BIN}/{name}", (CLOUD_INIT / "bin" / name).read_bytes(), "0644" if name.endswith(".sh") else "0755")
        for name in USER_DATA_SCRIPTS
    ]
    files.append(NodeFile(CLOUD_ADAPTER, adapter(node.cloud)))
    api = CLOUD_INIT / "clouds" / f"{node.cloud}_api.py"
    if api.is_file():  # the cloud's API tool, beside its SDK pin in the node's tools
        files.append(NodeFile(CLOUD_API, api.read_bytes()))
    files.append(NodeFile(f"{ETC}/node.env", node_env(node).encode()))
    files.append(NodeFile(f"{ETC}/node.json", node_json(node).encode()))
    files.append(NodeFile(f"{ETC}/nccl.env", nccl_env(node).encode()))
    if node.port_range:
        lo, hi = node.port_range
        conf = f"# NCCL's ephemeral ports inside the firewall's range\nnet.ipv4.ip_local_port_range = {lo} {hi}\n"
        files.append(NodeFile("/etc/sysctl.d/60-gpufleet-ports.conf", conf.encode()))
    return files


def _units(node: NodePlan) -> list[str]:
    units = [
        "gpufleet-gate.service",
        "gpufleet-train.service",
        "gpufleet-ckpt-sync.service",
        "gpufleet-monitor.service",
    ]
    if node.spot or node.drain_hook:
        units.append("gpufleet-spot.service")
    if node.role == "head":
        units += ["gpufleet-discover.service", "gpufleet-discover.timer"]
    if node.gpu_metric_namespace:
        units += ["gpufleet-gpu-metric.service", "gpufleet-gpu-metric.timer"]
    return units


def _entry(f: NodeFile) -> dict:
    return {"path": f.path, "permissions": f.mode, "content": f.content.decode()}


def render_user_data(node: NodePlan, *, bake: bool = False) -> str:
    """The complete #cloud-config text for this role; equal input gives equal output. `bake`: the machine
    `fleet image build` images instead: it installs the node's software, records it and powers off."""
    units = _units(node)
    enabled = [u for u in units if not _started_by_timer(u, units)]
    return _TEMPLATES.get_template("user-data.yaml.j2").render(
        node=node,
        files=[_entry(f) for f in node_files(node)],
        entry=ENTRY,
        enabled=[] if node.local or bake else enabled,
        bake=bake,
        indent=_indent,
    )


def _started_by_timer(unit: str, units: list[str]) -> bool:
    return unit.endswith(".service") and unit.removesuffix(".service") + ".timer" in units


def _indent(text: str, spaces: int) -> str:
    pad = " " * spaces
    return "".join(pad + line if line.strip() else line for line in text.splitlines(keepends=True))
