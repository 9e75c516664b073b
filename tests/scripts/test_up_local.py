"""scripts/up-local, the README's first command, run twice: the second run replaces the finished cluster of the first
and trains again, rather than stopping at "already up"."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FLEET = ROOT / ".venv" / "bin" / "fleet"


def fleet(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(FLEET), *args, "--stack", "local"], capture_output=True, text=True, timeout=120)


def up_local() -> subprocess.CompletedProcess:
    return subprocess.run([str(ROOT / "scripts" / "up-local"), "--json"], capture_output=True, text=True, timeout=600)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces and nftables")
def test_running_up_local_again_trains_again():
    earlier = fleet("status", "--json")
    if earlier.returncode == 0 and json.loads(earlier.stdout)["phase"] in ("starting", "running"):
        pytest.skip("the local cluster is running on this machine; this test would have to replace it")
    try:
        first = up_local()
        assert first.returncode == 0, first.stderr
        second = up_local()
        assert second.returncode == 0, second.stderr
        assert "earlier run is finished; removing it" in second.stderr
        summary = json.loads(second.stdout)
        assert (summary["steps_completed"], summary["resumed_from_step"]) == (40, None), "a fresh run, not a resume"
        assert json.loads(fleet("status", "--json").stdout)["phase"] == "finished"
    finally:
        fleet("down")
