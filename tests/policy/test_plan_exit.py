"""`fleet plan` fails (exit 1) on a mandatory finding; the internet opt-in is explicit."""

from __future__ import annotations

import json

from fleet.cli import main

OPEN_SSH = {"cloud": "aws", "zone": "us-east-1a", "instanceType": "g4dn.xlarge", "nodes": 2,
            "network": {"sshCidrs": ["0.0.0.0/0"]}}


def test_ssh_from_anywhere_is_a_mandatory_violation(write_stack, capsys):
    path = write_stack(OPEN_SSH)
    assert main(["plan", "--stack-file", str(path), "--json"]) == 1
    violations = json.loads(capsys.readouterr().out)["violations"]
    assert [(v["policy"], v["level"]) for v in violations] == [("no-open-ingress", "mandatory")]


def test_allow_internet_opts_in(write_stack, capsys):
    path = write_stack({**OPEN_SSH, "network": {"sshCidrs": ["0.0.0.0/0"], "allowInternet": True}})
    assert main(["plan", "--stack-file", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["violations"] == []
