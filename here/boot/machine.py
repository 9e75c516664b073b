"""One booted machine: systemd as PID 1 in its own PID, mount, UTS, IPC and network namespaces, on an overlay of an
image (here.boot.rootfs) whose upper layer is the machine's disk.

Why not systemd-nspawn: nspawn announces a container (`container=systemd-nspawn`, a cgroup namespace), and cloud-init
then reads no DMI data, so its AliYun datasource never recognises Alibaba Cloud and Ec2 never sees AWS. This machine
presents itself as the cloud's VM instead (DMI table, kernel command line) from a shell stage (stage.sh), and keeps
the host out of reach the way nspawn does: mounts only inside its mount namespace, the kernel's tunables read-only
except the network's, no capability to load modules, set the clock, make device nodes or do raw I/O. It has its own
cgroup (without a cgroup namespace, which systemd would take for a container) that ends with it.

`Machine` is a context manager: leaving it kills PID 1, which ends every process of the machine with it, removes the
cgroup and closes the console; the disk (upper layer) stays in the machine's directory for the report.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from here.boot import lifetime

STAGE = Path(__file__).with_name("stage.sh")
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The kernel command line the machine sees instead of the host's (a VM's own; nothing that names a datasource).
CMDLINE = "ro quiet\n"
# Capabilities no process of the machine has (systemd's bounding set, and every command run() starts in it): load
# kernel modules, set the clock, raw I/O, make device nodes, read or clear the kernel log, audit, MAC, accounting.
DROPPED_CAPS = ("sys_module", "sys_time", "sys_rawio", "mknod", "syslog", "audit_control", "audit_read",
                "mac_admin", "mac_override", "sys_pacct", "wake_alarm", "block_suspend")
BOUNDING_SET = "--bounding-set=" + ",".join(f"-{cap}" for cap in DROPPED_CAPS)
NICE = 5


class MachineError(RuntimeError):
    """The machine did not start or did not answer; the message carries the tail of its console."""


def cgroup2_root() -> Path:
    """Where the unified (v2) cgroup hierarchy is mounted on this host (/sys/fs/cgroup or .../unified)."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        if right.split()[0] == "cgroup2":
            return Path(left.split()[4])
    raise MachineError("this host has no cgroup2 hierarchy mounted; systemd needs one")


@dataclass(frozen=True)
class MachineConfig:
    """What one machine boots: a short unique name, the network namespace it lives in, the image's tree, its
    directory (disk, console log), its DMI table, files and symlinks on its disk before the first boot
    (path -> (content, mode), path -> target), and how many fake GPU device files it gets (GF_FAKE_GPU)."""

    name: str
    namespace: str
    lower: Path
    directory: Path
    dmi: Mapping[str, str]
    files: Mapping[str, tuple[bytes, int]] = field(default_factory=dict)
    links: Mapping[str, str] = field(default_factory=dict)
    gpus: int = 0
    shares: Mapping[str, Path] = field(default_factory=dict)  # path on the machine -> this host's directory there


def cgroup_path(name: str) -> Path:
    return cgroup2_root() / "gpufleet-boot" / name


class Machine:
    """A running machine; enter to boot it, leave to end it (always, also after a failure)."""

    def __init__(self, config: MachineConfig) -> None:
        self.config = config
        self.cgroup = cgroup_path(config.name)
        self.console = config.directory / "console.log"
        self.started = 0.0  # time.monotonic() at power-on: the clock of systemd's and the journal's timestamps
        self.started_wall = 0.0  # time.time() at power-on: the clock of file times
        self._proc: subprocess.Popen | None = None
        self._pid1: int | None = None
        self._master: int | None = None
        self._reader: threading.Thread | None = None

    @property
    def disk(self) -> Path:
        """The machine's own files: the overlay's upper layer, readable after it ended."""
        return self.config.directory / "upper"

    @property
    def pid1(self) -> int:
        if self._pid1 is None:
            raise MachineError(f"{self.config.name} is not running")
        return self._pid1

    def __enter__(self) -> Machine:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        cfg = self.config
        for sub in ("upper", "work"):
            (cfg.directory / sub).mkdir(parents=True, exist_ok=True)
        for path, (content, mode) in cfg.files.items():
            target = self.disk / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            target.chmod(mode)
        for path, destination in cfg.links.items():
            link = self.disk / path.lstrip("/")
            link.parent.mkdir(parents=True, exist_ok=True)
            link.unlink(missing_ok=True)
            link.symlink_to(destination)
        dmi = cfg.directory / "dmi"
        dmi.mkdir(exist_ok=True)
        for key, value in cfg.dmi.items():
            (dmi / key).write_text(value + "\n")
        (cfg.directory / "cmdline").write_text(CMDLINE)
        self.cgroup.mkdir(parents=True, exist_ok=True)
        master, slave = os.openpty()
        self._master = master
        env = {"PATH": SYSTEM_PATH, "BOOT_LOWER": str(cfg.lower), "BOOT_DIR": str(cfg.directory),
               "BOOT_DMI": str(dmi), "BOOT_CMDLINE": str(cfg.directory / "cmdline"), "BOOT_GPUS": str(cfg.gpus),
               "BOOT_SHARES": " ".join(f"{host}:{path}" for path, host in cfg.shares.items()),
               "BOOT_BOUNDING_SET": BOUNDING_SET}
        join_cgroup = 'echo $$ > "$0/cgroup.procs" && exec "$@"'
        # Niced, so the emulated cloud services (metadata, store) answer in their usual milliseconds however busy
        # the nodes are: the CLIs give instance metadata one second (botocore's default) before giving up.
        cmd = ["nice", "-n", str(NICE), "sh", "-c", join_cgroup, str(self.cgroup), "ip", "netns", "exec", cfg.namespace,
               "unshare", "--pid", "--mount", "--uts", "--ipc", "--fork", "--kill-child", "--propagation", "private",
               "bash", str(STAGE)]
        self.started, self.started_wall = time.monotonic(), time.time()
        self._proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True,
                                      preexec_fn=lifetime.die_with_parent)
        os.close(slave)
        self._reader = threading.Thread(target=self._copy_console, daemon=True)
        self._reader.start()
        self._pid1 = self._wait_for_systemd()

    def _copy_console(self) -> None:
        with open(self.console, "ab") as log:
            while True:
                try:
                    chunk = os.read(self._master, 65536)
                except OSError:
                    return
                if not chunk:
                    return
                log.write(chunk)
                log.flush()

    def _wait_for_systemd(self, timeout: float = 60) -> int:
        """The host pid of the machine's PID 1, once it is systemd."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise MachineError(f"{self.config.name} ended before systemd started:\n{self.console_tail()}")
            with contextlib.suppress(OSError):
                children = Path(f"/proc/{self._proc.pid}/task/{self._proc.pid}/children").read_text().split()
                if children and Path(f"/proc/{children[0]}/comm").read_text().strip() == "systemd":
                    return int(children[0])
            time.sleep(0.05)
        raise MachineError(f"{self.config.name}: systemd did not start in {timeout:.0f} s:\n{self.console_tail()}")

    def console_tail(self, lines: int = 30) -> str:
        text = self.console.read_text(errors="replace") if self.console.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def run(self, *argv: str, timeout: float = 60, input: str | None = None) -> subprocess.CompletedProcess:
        """Run a command inside the machine (all its namespaces, a clean environment); never raises on its status."""
        cmd = ["nsenter", "-t", str(self.pid1), "-m", "-u", "-i", "-n", "-p", "--", "/usr/bin/setpriv", BOUNDING_SET,
               "--", "/usr/bin/env", "-i", f"PATH={SYSTEM_PATH}", "LANG=C.UTF-8", *argv]
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=input)
        except subprocess.TimeoutExpired as expired:
            return subprocess.CompletedProcess(cmd, 124, expired.stdout or "", expired.stderr or "")

    def wait_booted(self, timeout: float = 120) -> str:
        """systemd's state once start-up is over ("running", "degraded"...); "" if it did not end in time. Until
        systemd has made /run/systemd/system and opened its socket, systemctl answers "offline" or nothing: ask
        again."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            state = self.run("systemctl", "is-system-running", "--wait", timeout=left).stdout.strip()
            if state not in ("", "offline"):
                return state
            time.sleep(0.2)
        return ""

    def read(self, path: str) -> bytes | None:
        """A file's content as the machine sees it (its symlinks resolved inside it); None if it has none."""
        cmd = ["nsenter", "-t", str(self.pid1), "-m", "--", "/usr/bin/cat", "--", path]
        result = subprocess.run(cmd, capture_output=True, timeout=30)
        return result.stdout if result.returncode == 0 else None

    def path(self, path: str) -> Path:
        """A path as the running machine sees it (through its PID 1's root), for paths without absolute symlinks:
        the host would resolve those against its own root."""
        return Path(f"/proc/{self.pid1}/root") / path.lstrip("/")

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self) -> None:
        """Kill PID 1 (the kernel then kills every process of the machine), remove its cgroup, close the console."""
        if self._proc is not None:
            if self._pid1 is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self._pid1, signal.SIGKILL)
            try:  # unshare reaps PID 1 and exits; killed first, it would leave PID 1 to the host's init
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self._proc.pid, signal.SIGKILL)
                self._proc.wait(timeout=30)
        self._remove_cgroup()
        if self._reader is not None:
            self._reader.join(timeout=5)
        if self._master is not None:
            with contextlib.suppress(OSError):
                os.close(self._master)
            self._master = None
        self._pid1 = None

    def _remove_cgroup(self, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while self.cgroup.exists():
            lifetime.remove_cgroup(self.cgroup)
            if self.cgroup.exists() and time.monotonic() > deadline:
                raise MachineError(f"cgroup {self.cgroup} still has processes after the machine ended")
            time.sleep(0.1)
        with contextlib.suppress(OSError):  # the shared parent, once no machine uses it
            self.cgroup.parent.rmdir()
