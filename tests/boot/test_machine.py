"""A machine boots systemd as PID 1 in namespaces of its own, looks like its cloud's VM to cloud-init, cannot reach
the host kernel's global settings, and leaves nothing behind when it ends (its disk stays for the report)."""

from __future__ import annotations

import secrets
import socket
import subprocess
from pathlib import Path

import pytest

from here.boot import rootfs
from here.boot.machine import Machine, MachineConfig

pytestmark = pytest.mark.usefixtures("needs_root")
CLOUD_INIT_OFF = "/etc/cloud/cloud-init.disabled"  # no metadata service here: these machines boot the image alone


@pytest.fixture
def machine(tmp_path):
    name = "gfbt" + secrets.token_hex(2)
    subprocess.run(["ip", "netns", "add", name], check=True)
    config = MachineConfig(name=name, namespace=name, lower=rootfs.tree(rootfs.PLAIN), directory=tmp_path / "m",
                           dmi={"sys_vendor": "Alibaba Cloud", "product_name": "Alibaba Cloud ECS"},
                           files={"/etc/hostname": (b"inside\n", 0o644), CLOUD_INIT_OFF: (b"", 0o644)}, gpus=2)
    try:
        with Machine(config) as booted:
            booted.state = booted.wait_booted()
            yield booted
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


def test_systemd_is_pid1_and_the_machine_is_not_a_container(machine):
    assert machine.run("readlink", "/proc/1/exe").stdout.strip() == "/usr/lib/systemd/systemd"
    assert machine.state in ("running", "degraded"), machine.run("systemctl", "--failed").stdout
    # cloud-init reads DMI only outside containers: this is what lets AliYun and Ec2 recognise their cloud.
    assert machine.run("systemd-detect-virt", "--container").stdout.strip() == "none"
    assert machine.path("/sys/class/dmi/id/product_name").read_text().strip() == "Alibaba Cloud ECS"
    assert machine.run("hostname").stdout.strip() == "inside"
    assert socket.gethostname() != "inside"


def test_host_kernel_settings_are_out_of_reach(machine):
    # Writing the value it has: harmless even if the protection were missing.
    denied = machine.run("sh", "-c", "cat /proc/sys/kernel/pid_max > /proc/sys/kernel/pid_max")
    assert denied.returncode != 0 and "Read-only file system" in denied.stderr
    allowed = machine.run("sysctl", "-w", "net.ipv4.ip_local_port_range=50000 51000")
    assert allowed.returncode == 0, allowed.stderr  # the machine's own network namespace
    assert machine.run("modprobe", "dummy").returncode != 0
    assert machine.run("mknod", "/tmp/sda", "b", "8", "0").returncode != 0
    # The same for what systemd starts (its bounding set), not only for the harness's own commands.
    unit = machine.run("systemd-run", "--wait", "--pipe", "--quiet", "mknod", "/tmp/sdb", "b", "8", "0")
    assert unit.returncode != 0 and "Operation not permitted" in unit.stderr
    assert sorted(p.name for p in machine.path("/dev").glob("nvidia*")) == ["nvidia0", "nvidia1", "nvidiactl"]


def test_a_directory_of_the_image_renames_as_on_a_vms_disk(machine):
    """dockerd renames /var/lib/docker/runtimes at every start, which a baked image holds (overlayfs answers EXDEV
    for a lower directory unless redirect_dir is on: docs/cloud-facts.md#docker-in-the-harness)."""
    renamed = machine.run("python3", "-c", "import os; os.rename('/etc/apt', '/etc/apt-old')")
    assert renamed.returncode == 0, renamed.stderr
    assert "apt.conf.d" in machine.run("ls", "/etc/apt-old").stdout.split()
    assert machine.run("test", "-e", "/etc/apt").returncode != 0


def test_ending_the_machine_leaves_nothing(tmp_path):
    name = "gfbt" + secrets.token_hex(2)
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        config = MachineConfig(name=name, namespace=name, lower=rootfs.tree(rootfs.PLAIN),
                               directory=tmp_path / "m", dmi={}, files={CLOUD_INIT_OFF: (b"", 0o644)})
        with Machine(config) as booted:
            pid1, cgroup = booted.pid1, booted.cgroup
            assert machine_pids(name)
            # The machine's mounts live in its mount namespace only: its overlay never shows on the host.
            assert str(tmp_path) in Path(f"/proc/{pid1}/mountinfo").read_text()
            assert str(tmp_path) not in Path("/proc/self/mountinfo").read_text()
        assert not cgroup.exists()
        assert not machine_pids(name)
        assert subprocess.run(["ps", "-p", str(pid1)], capture_output=True).returncode != 0
        assert (tmp_path / "m" / "upper").is_dir()  # the disk stays for the report
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


def machine_pids(namespace: str) -> list[str]:
    return subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True).stdout.split()
