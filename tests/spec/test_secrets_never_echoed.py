"""A credential in a stack is never echoed: every string field of the cluster's schema (each property, list item, map
key and map value that takes text, found by walking `fleet schema`'s document, not listed by hand) is fed a URL that
carries a user and password, and every output of `fleet plan` (the table, `--json` with its resources and outputs)
and `fleet cost`, stdout and stderr alike, is searched for the password. Messages write it `xxxxx`, as Docker does."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from fleet.cli import main
from fleet.schema_command import schema_text
from spec.redaction import redacted

PASSWORD = "Sup3rS3cretPa55"
SECRET = f"https://gpufleet:{PASSWORD}@mirror.example.com/simple"
BASE = {"cloud": "aws", "zone": "us-west-2b", "instanceType": "g5.48xlarge", "nodes": 2}


def _resolve(node: dict, defs: dict) -> dict:
    return defs[node["$ref"].rsplit("/", 1)[1]] if "$ref" in node else node


def _string_spots(node: dict, defs: dict, path: tuple) -> list[tuple]:
    """Every place in the schema that takes text: (path, how) with how `value`, `key` (a map's key) or `item`."""
    node = _resolve(node, defs)
    spots = []
    for branch in node.get("anyOf", []):
        spots += _string_spots(branch, defs, path)
    if node.get("type") == "string" or isinstance(node.get("const"), str) or any(
            isinstance(value, str) for value in node.get("enum", [])):
        spots.append((path, "value"))
    for name, child in node.get("properties", {}).items():
        spots += _string_spots(child, defs, (*path, name))
    if isinstance(node.get("items"), dict):
        spots += [(spot, "item" if how == "value" and spot == path else how)
                  for spot, how in _string_spots(node["items"], defs, path)]
    if isinstance(node.get("additionalProperties"), dict):
        spots.append((path, "key"))
        spots += [(spot, "entry" if spot == path else how)
                  for spot, how in _string_spots(node["additionalProperties"], defs, path)]
    return list(dict.fromkeys(spots))


SCHEMA = json.loads(schema_text())
SPOTS = _string_spots(SCHEMA, SCHEMA["$defs"], ())


def _with_secret(path: tuple, how: str) -> dict[str, Any]:
    cluster = copy.deepcopy(BASE)
    node = cluster
    for key in path[:-1]:
        node = node.setdefault(key, {})
    value = {"value": SECRET, "item": [SECRET], "key": {SECRET: "x"}, "entry": {"x": SECRET}}[how]
    if path and path[0] == "candidates":  # a list of maps: the spot is a field of its first item
        cluster["candidates"] = [{path[-1]: SECRET}] if len(path) > 1 else [SECRET]
    else:
        node[path[-1]] = value
    return cluster


def _outputs(path, capsys) -> tuple[str, set[int]]:
    """Everything `fleet plan` (table and JSON) and `fleet cost` print for the stack, and their exit codes."""
    seen, codes = [], set()
    for argv in (["plan", "--stack-file", str(path)], ["plan", "--stack-file", str(path), "--json"],
                 ["cost", "--stack-file", str(path), "--json"]):
        codes.add(main(argv))
        captured = capsys.readouterr()
        seen.append(captured.out + captured.err)
    return "\n".join(seen), codes


def test_the_schema_walk_finds_the_fields_that_take_text():
    found = {".".join(path) for path, _ in SPOTS}
    assert {"network.pipMirror", "network.registryMirror", "name", "job.data", "tags", "storage.existingBucket",
            "candidates.zone", "image", "image.baked", "network.sshCidrs", "cloud"} <= found
    assert len(SPOTS) >= 35


@pytest.mark.parametrize("path, how", SPOTS, ids=[f"{'.'.join(p)}:{h}" for p, h in SPOTS])
def test_a_credential_in_any_string_field_is_never_echoed(path, how, tmp_path, capsys):
    stack = tmp_path / "Pulumi.secret.yaml"
    stack.write_text(yaml.safe_dump({"config": {"aws:region": "us-west-2", "gpufleet:cluster": _with_secret(path,
                                                                                                          how)}}))
    out, codes = _outputs(stack, capsys)
    assert PASSWORD not in out, f"{'.'.join(path)} echoed the password"
    # Refused, so it reaches no resource either (user-data, where most values end up, is compressed: no search of
    # the output would find it there).
    assert codes == {2} and "xxxxx" in out and "Traceback" not in out


@pytest.mark.parametrize("config", [
    {"aws:region": SECRET, "gpufleet:cluster": BASE},
    {"aws:region": "us-west-2", "gpufleet:cluster": {**BASE, "region": SECRET}},
    {"aws:region": "us-west-2", "gpufleet:cluster": json.dumps({**BASE, "network": {"pipMirror": SECRET}})},
], ids=["the region key", "a region written in the cluster", "a cluster written as JSON"])
def test_a_credential_anywhere_else_in_the_stack_is_never_echoed(config, tmp_path, capsys):
    stack = tmp_path / "Pulumi.secret.yaml"
    stack.write_text(yaml.safe_dump({"config": config}))
    out, codes = _outputs(stack, capsys)
    assert PASSWORD not in out and codes == {2}


def test_a_credential_in_the_stack_argument_is_never_echoed(capsys):
    assert main(["plan", "--stack", SECRET]) == 2
    captured = capsys.readouterr()
    assert PASSWORD not in captured.out + captured.err and "xxxxx" in captured.err


@pytest.mark.parametrize("text, shown", [
    ("http://foo:bar@mirror-1.example.com/", "http://foo:xxxxx@mirror-1.example.com/"),  # moby's own test case
    ("'https://u:p@ss@h.example.com/x' is not", "'https://u:xxxxx@h.example.com/x' is not"),
    ("https://TOKEN@git.example.com/repo", "https://xxxxx@git.example.com/repo"),
    ("u:secret@registry.example.com/nvcr", "u:xxxxx@registry.example.com/nvcr"),
    ("git@github.com:org/repo.git and a@example.com", "git@github.com:org/repo.git and a@example.com"),
    ("https://mirror.example.com/simple", "https://mirror.example.com/simple"),
])
def test_redaction_writes_the_password_as_docker_does(text, shown):
    assert redacted(text) == shown
