"""`fleet roll` and `fleet heal` read the stack through `pulumi stack export`: an answer that holds no deployment (a
notice printed before the JSON, a truncated write, a JSON of another shape) stops them with exit 1 and what came back,
never a traceback; a URL's password in it is not repeated."""

from __future__ import annotations

import sys

import pytest

from fleet.cli import main

FAKE_PULUMI = f"""#!{sys.executable}
import os, sys
if sys.argv[1:3] == ["stack", "export"]:
    print(os.environ["FAKE_EXPORT"])
"""
ANSWERS = {
    "a notice": "warning: A new version of Pulumi is available; see https://u:s3cret@get.example.com/",
    "truncated": '{"version": 3, "deployment": {"resources": [',
    "no deployment": '{"version": 3}',
    "a list": "[1, 2]",
    "a deployment that is no map": '{"version": 3, "deployment": null}',
}


@pytest.mark.parametrize("command", ["roll", "heal"])
@pytest.mark.parametrize("answer", sorted(ANSWERS))
def test_an_export_without_a_deployment_fails_with_what_came_back(command, answer, tmp_path, monkeypatch, capsys):
    (tmp_path / "pulumi").write_text(FAKE_PULUMI)
    (tmp_path / "pulumi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:" + __import__("os").environ["PATH"])
    monkeypatch.setenv("FAKE_EXPORT", ANSWERS[answer])
    assert main([command, "--stack", "ali-erdma"]) == 1
    err = capsys.readouterr().err
    assert "`pulumi stack export --stack ali-erdma` answered no deployment JSON" in err
    assert "Traceback" not in err and "s3cret" not in err
