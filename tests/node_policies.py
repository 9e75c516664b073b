"""The nodes' role policy as a stack's preview renders it, read alike for every cloud (AWS and Alibaba write
`Statement`, Tencent `statement`): which statements grant each action. Shared by the tests that hold the calls the
nodes make against what their role grants (tests/clouds/test_node_permissions.py, tests/boot/test_boot.py,
tests/cloud_init/test_cloud_api.py)."""

from __future__ import annotations

import json

from fleet.preview import run_program
from fleet.stacks import resolve
from policy.base import Reader
from policy.readers import reader_for

_PREVIEWS: dict[str, list[dict]] = {}


def resources_of(stack: str) -> list[dict]:
    """A shipped stack's previewed resources, once per test session."""
    if stack not in _PREVIEWS:
        _PREVIEWS[stack] = run_program(resolve(stack, None)).resources
    return _PREVIEWS[stack]


def _lower(value: dict) -> dict:
    return {key.lower(): item for key, item in value.items()}


def _node_policy(resources: list[dict]) -> dict:
    [policy] = [r for r in resources if r["name"].endswith("-node-policy") and reader_for(r["type"])]
    return policy


def reader(resources: list[dict]) -> Reader:
    """How the cloud of the nodes' policy names its resources (policy.clouds: `bucket_of`)."""
    return reader_for(_node_policy(resources)["type"])


def node_statements(resources: list[dict]) -> list[dict]:
    """The allowing statements of the one policy document on the nodes' role (keys lower-cased)."""
    policy = _node_policy(resources)
    documents = list(reader(resources).policy_documents(policy["type"], policy["inputs"]))
    assert len(documents) == 1, f"{len(documents)} node policy documents"
    statements = map(_lower, _lower(json.loads(documents[0]))["statement"])
    return [s for s in statements if s["effect"].lower() == "allow"]


def grants(resources: list[dict]) -> dict[str, list[dict]]:
    """Each action the nodes' role grants, with the statements that grant it."""
    found: dict[str, list[dict]] = {}
    for statement in node_statements(resources):
        actions = statement["action"] if isinstance(statement["action"], list) else [statement["action"]]
        for action in actions:
            found.setdefault(action, []).append(statement)
    return found
