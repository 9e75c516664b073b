"""`fleet plan` fails (exit 1) on a mandatory finding; the internet opt-in is explicit."""

from __future__ import annotations

import json

from fleet.cli import main

# On Alibaba, where SSH is a way in (AWS refuses sshCidrs and offers Session Manager instead).
OPEN_SSH = {"cloud": "alicloud", "zone": "cn-hangzhou-h", "instanceType": "ecs.gn7i-c32g1.8xlarge",
            "image": "ubuntu_22_04_x64_20G_alibase_20240130.vhd", "nodes": 2, "network": {"sshCidrs": ["0.0.0.0/0"]}}


def test_ssh_from_anywhere_is_a_mandatory_violation(write_stack, capsys):
    path = write_stack(OPEN_SSH, region=None, extra={"alicloud:region": "cn-hangzhou"})
    assert main(["plan", "--stack-file", str(path), "--json"]) == 1
    violations = json.loads(capsys.readouterr().out)["violations"]
    assert [(v["policy"], v["level"]) for v in violations] == [("no-open-ingress", "mandatory")]


def test_allow_internet_opts_in(write_stack, capsys):
    path = write_stack({**OPEN_SSH, "network": {"sshCidrs": ["0.0.0.0/0"], "allowInternet": True}}, region=None,
                       extra={"alicloud:region": "cn-hangzhou"})
    assert main(["plan", "--stack-file", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["violations"] == []
