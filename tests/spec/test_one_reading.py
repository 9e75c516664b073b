"""One reading of a stack: what deploys is what reviewers read. A key given twice is refused in every form the loader
accepts, and by `pulumi up`'s program for the form it reads itself (a cluster written as a JSON string); a stack that
carries the bake's key is refused by both; an empty --stack or --stack-file is an error, not the local stack; half a
character (a lone surrogate escape) is refused with its field, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fleet.cli import main
from fleet.preview import run_program
from spec.configkeys import BAKE_KEY
from spec.errors import SpecError
from spec.stackfile import CLUSTER_KEY, StackFile, load_stack_file

CLUSTER = {"cloud": "aws", "zone": "us-west-2b", "instanceType": "g5.48xlarge", "nodes": 2,
           "network": {"allowInternet": False}}
REGION = "  aws:region: us-west-2\n"
# The same repeated key, `allowInternet: false` then `true` (which would open SSH to the internet with no finding),
# in each form a stack file may write it.
TWICE = {
    "yaml block": "config:\n" + REGION + "  gpufleet:cluster:\n    cloud: aws\n    network:\n"
                  "      allowInternet: false\n      allowInternet: true\n",
    "yaml flow": "config:\n" + REGION + "  gpufleet:cluster: {cloud: aws, network: {allowInternet: false, "
                 "allowInternet: true}}\n",
    "yaml quoted and plain": "config:\n" + REGION + "  gpufleet:cluster:\n    network:\n      'allowInternet': false\n"
                             "      allowInternet: true\n",
    "json string": "config:\n" + REGION + "  gpufleet:cluster: '{\"cloud\": \"aws\", \"allowInternet\": false, "
                   "\"allowInternet\": true}'\n",
    "json string, nested": "config:\n" + REGION + "  gpufleet:cluster: '{\"cloud\": \"aws\", \"network\": "
                           "{\"allowInternet\": false, \"allowInternet\": true}}'\n",
    "json string, escaped key": "config:\n" + REGION + "  gpufleet:cluster: '{\"network\": {\"allowInternet\": false, "
                                "\"allow\\u0049nternet\": true}}'\n",
}


@pytest.mark.parametrize("form", sorted(TWICE))
def test_a_key_given_twice_is_refused_in_every_form(form, tmp_path, capsys):
    path = tmp_path / "Pulumi.twice.yaml"
    path.write_text(TWICE[form])
    assert main(["plan", "--stack-file", str(path)]) == 2
    err = capsys.readouterr().err
    said = "gives `allowInternet` twice" if form.startswith("json") else "allowInternet: is given twice"
    assert said in err and "Traceback" not in err


def _engine_stack(config: dict, tmp_path: Path) -> StackFile:
    """A stack as the engine hands it to `pulumi up`'s program, which reads no file: the loader is not asked."""
    return StackFile(name="engine", path=tmp_path / "Pulumi.engine.yaml", config=config)


def test_the_program_reads_a_json_cluster_as_the_loader_does(tmp_path):
    text = json.dumps(CLUSTER).replace('"allowInternet": false', '"allowInternet": false, "allowInternet": true')
    with pytest.raises(SpecError) as refused:
        run_program(_engine_stack({"aws:region": "us-west-2", CLUSTER_KEY: text}, tmp_path))
    assert "gives `allowInternet` twice" in refused.value.render()
    # The same cluster written once is planned: the program reads the JSON string as an object.
    once = run_program(_engine_stack({"aws:region": "us-west-2", CLUSTER_KEY: json.dumps(CLUSTER)}, tmp_path))
    assert once.plan.network.vpc_cidr == "10.0.0.0/16"


def test_a_stack_with_the_bake_key_is_refused_by_the_loader_and_the_program(tmp_path):
    path = tmp_path / "Pulumi.baked.yaml"
    path.write_text("config:\n" + REGION + f"  {BAKE_KEY}: instance\n  gpufleet:cluster: {json.dumps(CLUSTER)}\n")
    with pytest.raises(SpecError) as loaded:
        load_stack_file(path)
    with pytest.raises(SpecError) as planned:
        run_program(_engine_stack({"aws:region": "us-west-2", BAKE_KEY: "instance", CLUSTER_KEY: CLUSTER}, tmp_path))
    for refused in (loaded, planned):
        assert f"{BAKE_KEY}: makes a stack a bake" in refused.value.render()


@pytest.mark.parametrize("command", [["plan"], ["cost"], ["image", "build"], ["heal"], ["roll"], ["up"]])
@pytest.mark.parametrize("flag", ["--stack", "--stack-file"])
@pytest.mark.parametrize("empty", ["", "  "])
def test_an_empty_stack_is_an_error_not_the_local_stack(command, flag, empty, capsys):
    assert main([*command, flag, empty]) == 2
    err = capsys.readouterr().err
    assert f"{flag}: is empty" in err and "Fix:" in err and "Traceback" not in err


@pytest.mark.parametrize("text", [
    'config:\n  gpufleet:cluster:\n    cloud: local\n    instanceType: cpu\n    nodes: 2\n'
    '    job: {model: tiny, data: "/data/\\uDCFF/tokens.bin"}\n',
    'config:\n  gpufleet:cluster: \'{"cloud": "local", "instanceType": "cpu", "nodes": 2, '
    '"job": {"data": "/data/\\udcff"}}\'\n',
    'config:\n  gpufleet:cluster:\n    cloud: local\n    instanceType: cpu\n    nodes: 2\n    tags: {"\\uD800": x}\n',
])
def test_half_a_character_is_refused_with_its_field(text, tmp_path, capsys):
    path = tmp_path / "Pulumi.half.yaml"
    path.write_text(text)
    assert main(["plan", "--stack-file", str(path), "--json"]) == 2
    captured = capsys.readouterr()
    assert "lone surrogate" in captured.err and "gpufleet:cluster." in captured.err and not captured.out
