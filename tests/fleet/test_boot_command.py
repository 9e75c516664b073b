"""`fleet up --boot`'s refusals: each names what the user wrote and the fix, exit 2, no traceback. The boot itself
runs in tests/boot/test_fleet_up_boot.py (root)."""

from __future__ import annotations

import os

from fleet.boot_command import _print_table
from fleet.cli import main
from here.boot import host, report


def test_a_machine_that_cannot_boot_machines_is_named_before_anything_starts(capsys, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert main(["up", "--stack", "tencent-spot", "--boot"]) == 2
    err = capsys.readouterr().err
    assert f"--boot cannot boot machines here: {host.why_not_here()}." in err
    assert "needs root" in err


def test_a_missing_harness_tool_is_named_with_its_package_exit_2(capsys, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(host, "missing_tools", lambda: {"dpkg-dev": ["dpkg-scanpackages"]})
    assert main(["up", "--stack", "tencent-spot", "--boot"]) == 2
    err = capsys.readouterr().err
    assert "dpkg-scanpackages not installed" in err and "apt-get install -y dpkg-dev" in err
    assert "Traceback" not in err


def test_a_negative_worker_count_is_refused(capsys):
    assert main(["up", "--stack", "tencent-spot", "--boot", "--workers", "-1"]) == 2
    assert "--workers must be 0 or more, got -1" in capsys.readouterr().err


def test_the_table_shows_each_nodes_outcome_and_every_phase_whole(capsys):
    phases = dict.fromkeys(report.PHASES, None) | {"user-data": 3.3, "first-step": 107.8}
    summary = {"cluster": "ali-spot", "seconds_total": 122.9, "cluster_phases": phases,
               "nodes": {"head": {"outcome": "training", "phases": phases},
                         "worker-1": {"outcome": "failed: gate", "phases": dict.fromkeys(report.PHASES, None)}}}
    _print_table(summary)
    rows = {line.split("│")[1].strip(): [cell.strip() for cell in line.split("│")[2:-1]]
            for line in capsys.readouterr().out.splitlines() if line.startswith("│")}
    assert rows["outcome"] == ["training", "failed: gate"]
    assert rows["user-data"] == ["3.3", "-"] and rows["first-step"] == ["107.8", "-"]
    assert set(rows) == {"outcome", *report.PHASES}
