"""The failure budget, booted for real: both nodes of aws-g4dn-dev come up on a DLAMI whose driver (570.133.20) is
below the branch the job's CUDA 13 wheel needs (580), so both fail `gpufleet-driver` for the same permanent reason.
Each records itself in the bucket (moto's S3, with its instance role); with a budget of one node, the second to
look finds the budget spent and stays without asking its group for a replacement, saying so in its metrics."""

from __future__ import annotations

import os

import pytest

from fleet.stacks import resolve, spec_and_plan
from here.boot import report
from here.boot.cluster import Boot
from plan import userdata
from plan.software import failure_records

pytestmark = pytest.mark.usefixtures("needs_root")

OUTCOME_TIMEOUT_S = 900
DRIVER = "570.133.20"


def test_a_mismatched_driver_stops_the_replacements_after_its_budget(monkeypatch):
    monkeypatch.setattr(userdata, "FAILURE_BUDGET", 1)  # two nodes fail: the second one spends it
    plan = spec_and_plan(resolve("aws-g4dn-dev", None))[1]
    reason = f"driver:{DRIVER}:min={plan.software.driver_min_branch}"
    records = f"{failure_records(plan.storage.checkpoint_uri)}/{reason.replace(':', '_')}"
    with Boot(plan, driver=DRIVER, keep=bool(os.environ.get("GF_BOOT_KEEP"))) as boot:
        outcomes = {node.name: report.wait_outcome(node, OUTCOME_TIMEOUT_S) for node in boot.nodes}
        health = {node.name: report.collect(node).health for node in boot.nodes}
        journals = {node.name: node.machine.run("journalctl", "--no-pager", "-u", "gpufleet-gate.service").stdout
                    for node in boot.nodes}
        listing = boot.node("head").machine.run("aws", "s3", "ls", "--recursive", f"{records}/")
    assert set(outcomes.values()) == {f"failed: {reason}"}, outcomes
    assert listing.returncode == 0 and len(listing.stdout.splitlines()) == 2, listing.stdout + listing.stderr
    stopped = [name for name, metrics in health.items()
               if f'gpufleet_replacement_stopped{{reason="{reason}"}} 1' in metrics]
    assert stopped, health
    for name in stopped:
        assert "replacement stopped: 2 nodes failed" in journals[name]
        assert "set-instance-health" not in journals[name] and "InvalidInstanceID" not in journals[name]
