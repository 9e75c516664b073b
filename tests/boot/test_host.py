"""Why a machine cannot boot harness machines: root, the tools, a root that is a mount point."""

from __future__ import annotations

import ast
import os
import shutil
import sys
from pathlib import Path

from here.boot import host

HARNESS = Path(host.__file__).parent


def test_a_user_without_root_is_told_root_is_needed(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert host.why_not_here().startswith("needs root")


def test_a_missing_tool_is_named_with_the_package_that_adds_it(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    real = shutil.which
    gone = {"dnsmasq", "dpkg-scanpackages"}
    monkeypatch.setattr(shutil, "which", lambda tool: None if tool in gone else real(tool) or f"/bin/{tool}")
    assert host.why_not_here() == ("dnsmasq, dpkg-scanpackages not installed: scripts/setup installs them as root, "
                                   "or `apt-get install -y dnsmasq-base dpkg-dev`")


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


def _commands_run(source: str) -> set[str]:
    """The program of every subprocess call whose argv is a list starting with a string literal."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "subprocess"
                and node.args and isinstance(node.args[0], ast.List) and node.args[0].elts
                and isinstance(node.args[0].elts[0], ast.Constant) and isinstance(node.args[0].elts[0].value, str)):
            found.add(node.args[0].elts[0].value)
    return found


def test_the_host_check_covers_every_command_the_harness_runs():
    """A command the harness runs but the check does not know fails a fresh machine with a traceback (it was
    dpkg-scanpackages) instead of a skip or an exit 2 that names the package."""
    run = set().union(*(_commands_run(path.read_text()) for path in HARNESS.glob("*.py")))
    assert run, "no subprocess calls found: the scan no longer sees the harness's code"
    assert sorted(run - set(host.TOOLS)) == []


def test_the_scan_sees_a_command_the_check_lacks():
    assert _commands_run('import subprocess\nsubprocess.run(["dpkg-scanpackages", "."], check=True)\n') == {
        "dpkg-scanpackages"}
    assert sys.executable not in _commands_run("import subprocess, sys\nsubprocess.run([sys.executable])\n")
