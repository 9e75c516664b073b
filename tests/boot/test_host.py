"""Why a machine cannot boot harness machines: root, the tools, a root that is a mount point."""

from __future__ import annotations

import os
import shutil

from components.boot import host


def test_a_user_without_root_is_told_root_is_needed(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert host.why_not_here().startswith("needs root")


def test_a_missing_tool_is_named_with_the_command_that_installs_it(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    real = shutil.which
    monkeypatch.setattr(shutil, "which", lambda tool: None if tool == "dnsmasq" else real(tool) or f"/bin/{tool}")
    assert host.why_not_here() == "needs root and dnsmasq (scripts/setup installs them as root)"


def test_a_chroot_is_told_apart_from_a_machine(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(shutil, "which", lambda tool: f"/bin/{tool}")
    monkeypatch.setattr(host, "root_is_a_mount", lambda: False)
    assert host.why_not_here().startswith("/ is not a mount point (a chroot)")
    monkeypatch.setattr(host, "root_is_a_mount", lambda: True)
    assert host.why_not_here() is None


def test_this_process_root_is_read_from_the_kernels_mount_table():
    with open("/proc/self/mountinfo") as mounts:
        roots = [line for line in mounts if line.split()[4] == "/"]
    assert host.root_is_a_mount() == bool(roots)
