"""Starting and ending the processes of a local cluster: each node's bootstrap (`gpufleet-node start` in its
namespace) and the metadata service. Each leads its own process group; a node's namespace names every process
that belongs to it, so a node can be killed whole (a lost machine) and nothing outlives `fleet down`."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from here.local import instances, network
from here.local.errors import LocalError
from here.local.layout import Layout, Node

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _in(namespace: str | None, cmd: list[str]) -> list[str]:
    return network.inside(namespace, *cmd) if namespace else cmd


def start_node(node: Node, entry: Path, namespaced: bool) -> subprocess.Popen:
    """The node boots like a fresh machine: a clean environment, its root, the job's Python first on PATH and then
    the tools this machine gives `fleet` (here.local.host checked those)."""
    path = f"{VENV_BIN}:{os.environ.get('PATH') or SYSTEM_PATH}"
    env = ["env", "-i", f"PATH={path}", f"GPUFLEET_ROOT={node.root}", f"HOME={node.root}",
           "PYTHONUNBUFFERED=1", "LANG=C.UTF-8"]
    node.log.parent.mkdir(parents=True, exist_ok=True)
    with open(node.log, "ab") as log:
        return subprocess.Popen(_in(node.namespace if namespaced else None, [*env, str(entry), "start"]),
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=node.root)


def start_metadata(lay: Layout, namespaced: bool, address: str) -> subprocess.Popen:
    """The metadata service (here.metadata) for what here.local.instances wrote; returns once it listens."""
    cmd = [sys.executable, "-m", "here.metadata.service", str(lay.metadata)]
    log = lay.directory / "metadata.log"
    with open(log, "ab") as errors:
        proc = subprocess.Popen(_in(lay.bridge_namespace if namespaced else None, cmd), cwd=REPO,
                                stdout=subprocess.PIPE, stderr=errors, start_new_session=True, text=True)
    if proc.stdout.readline().strip() != "ready":
        proc.wait()
        last = (log.read_text(errors="replace").strip().splitlines() or ["it exited"])[-1]
        raise LocalError(f"the metadata service could not listen on {address}, port(s) "
                         f"{', '.join(str(instances.port(lay, node)) for node in lay.nodes)}: {last}")
    return proc


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def kill_namespace(namespace: str) -> None:
    """A lost machine: every process of the node dies at once, no chance to checkpoint."""
    _signal(network.pids(namespace), signal.SIGKILL)


def end(groups: list[int], namespaces: list[str], grace_s: float = 5.0) -> None:
    """SIGTERM to every recorded group and every process in the namespaces, SIGKILL to what is left after grace_s."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in groups:
            _signal_group(pid, sig)
        for namespace in namespaces:
            _signal(network.pids(namespace), sig)
        deadline = time.monotonic() + (grace_s if sig == signal.SIGTERM else 0)
        while time.monotonic() < deadline and (_alive(groups) or any(network.pids(ns) for ns in namespaces)):
            time.sleep(0.1)


def alive(group: int) -> bool:
    """A node's process group (its leader's pid) still has a process."""
    return group > 0 and _alive([group])


def _alive(groups: list[int]) -> bool:
    for pid in groups:
        try:
            os.killpg(pid, 0)
            return True
        except (ProcessLookupError, PermissionError):
            continue
    return False
