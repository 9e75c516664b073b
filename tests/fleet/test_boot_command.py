"""`fleet up --boot`'s refusals: each names what the user wrote and the fix, exit 2, no traceback. The boot itself
runs in tests/boot/test_fleet_up_boot.py (root)."""

from __future__ import annotations

import os

from components.boot import host
from fleet.cli import main


def test_the_local_stack_is_refused_with_the_fix(capsys):
    assert main(["up", "--stack", "local", "--boot"]) == 2
    err = capsys.readouterr().err
    assert "--boot" in err and "stack 'local'" in err and "Drop --boot" in err
    assert "Traceback" not in err


def test_a_machine_that_cannot_boot_machines_is_named_before_anything_starts(capsys, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert main(["up", "--stack", "tencent-spot", "--boot"]) == 2
    err = capsys.readouterr().err
    assert f"--boot cannot boot machines here: {host.why_not_here()}." in err
    assert "needs root" in err


def test_a_negative_worker_count_is_refused(capsys):
    assert main(["up", "--stack", "tencent-spot", "--boot", "--workers", "-1"]) == 2
    assert "--workers must be 0 or more, got -1" in capsys.readouterr().err
