"""Docker inside a harness machine, for the boots that run the node's monitor for real (a bake, and the nodes booted
from a baked image: Boot(monitor=True)). The monitor's own steps stay as on a cloud (apt's docker.io, the plan's
registry mirror merged into /etc/docker/daemon.json, `docker pull`, `docker run --gpus all`); what the machine differs
in from a VM is settled here, by files on its disk before its first boot (none of them in user-data, none kept in a
baked image: here.boot.baked removes the harness's files):

- The daemon's settings: the vfs storage driver, since the machine's root is itself an overlay, which overlay2 cannot
  stack on (docs/cloud-facts.md#docker-in-the-harness); no bridge and no iptables rules (every monitor container runs
  on the host network); and RUNTIME as the default runtime.
- RUNTIME wraps runc: a machine runs with fewer capabilities than a VM's root has (here.boot.machine DROPPED_CAPS),
  and runc fails a container whose spec asks for one the caller's bounding set lacks (Docker's default set includes
  CAP_MKNOD). The wrapper removes those from the OCI spec's capability sets, then runs runc.

The containers themselves are stand-ins served by the harness's registry (here.boot.registry): busybox under the
images' real names, which start and keep running; no exporter, Prometheus or Grafana runs in the harness.
"""

from __future__ import annotations

import json

RUNTIME = "/usr/local/sbin/gpufleet-boot-runc"
DAEMON = {
    "storage-driver": "vfs",
    "bridge": "none",
    "iptables": False,
    "ip6tables": False,
    "default-runtime": "gpufleet-boot",
    "runtimes": {"gpufleet-boot": {"path": RUNTIME}},
}
# Capability numbers as linux/capability.h has them (CAP_CHOWN = 0 ... CAP_CHECKPOINT_RESTORE = 40).
CAPABILITIES = (
    "chown", "dac_override", "dac_read_search", "fowner", "fsetid", "kill", "setgid", "setuid", "setpcap",
    "linux_immutable", "net_bind_service", "net_broadcast", "net_admin", "net_raw", "ipc_lock", "ipc_owner",
    "sys_module", "sys_rawio", "sys_chroot", "sys_ptrace", "sys_pacct", "sys_admin", "sys_boot", "sys_nice",
    "sys_resource", "sys_time", "sys_tty_config", "mknod", "lease", "audit_write", "audit_control", "setfcap",
    "mac_override", "mac_admin", "syslog", "wake_alarm", "block_suspend", "audit_read", "perfmon", "bpf",
    "checkpoint_restore"
)

WRAPPER = '''#!/usr/bin/python3
"""gpufleet boot harness (here/boot/docker.py): runc for Docker in a harness machine. A `create` or `run` gets its
OCI spec's capability sets cut to this machine's bounding set (the harness drops a few a VM's root has), since runc
fails a container that asks for one the caller lacks; everything else goes to runc as it came."""
import json, os, sys

NAMES = %(names)r
args = sys.argv[1:]
bundle = next((args[i + 1] for i, arg in enumerate(args[:-1]) if arg in ("--bundle", "-b")),
              next((arg.split("=", 1)[1] for arg in args if arg.startswith("--bundle=")), None))
if bundle and ({"create", "run"} & set(args)):
    bounding = int(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("CapBnd:")), 16)
    held = {"CAP_" + name.upper() for bit, name in enumerate(NAMES) if bounding >> bit & 1}
    path = os.path.join(bundle, "config.json")
    with open(path) as f:
        spec = json.load(f)
    sets = spec.get("process", {}).get("capabilities", {})
    for key, caps in sets.items():
        sets[key] = [cap for cap in caps if cap in held]
    with open(path, "w") as f:
        json.dump(spec, f)
os.execvp("runc", ["runc", *args])
'''


def files() -> dict[str, tuple[bytes, int]]:
    """Docker's settings and the runtime wrapper on the machine's disk (path -> content, mode)."""
    return {
        "/etc/docker/daemon.json": ((json.dumps(DAEMON, indent=2) + "\n").encode(), 0o644),
        RUNTIME: ((WRAPPER % {"names": CAPABILITIES}).encode(), 0o755),
    }
