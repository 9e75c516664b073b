"""Every grant of every shipped stack is its own cluster's: no statement in any permission document a stack declares
(IAM, RAM, CAM: every input that holds a JSON document with statements, found by its shape, not by resource type)
lets its nodes act on another cluster's resources.

Another cluster is the stack's twin: the same file under another stack name, so the same cluster `name` with another
identity, as two teams' stacks may be; and, for one stack of each cloud, both again on one `existingBucket` they
share. What the twin's own statements grant (each resource they name, with the values their conditions require) is
what the twin owns; a statement of the stack that would allow one of the same actions on any of it fails. The only
statements exempt are those AWS, Alibaba and Tencent authorise on no resource at all: describe calls, which read, and
Session Manager's agent, which acts on its own instance's registration (docs/cloud-facts.md#aws-node-permissions,
#aws-session-manager, #alibaba-node-permissions, #tencent-node-permissions)."""

from __future__ import annotations

import copy
import json
import re
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

from fleet.preview import run_program
from fleet.stacks import spec_and_plan
from plan.paths import PROJECT_ROOT
from spec.stackfile import CLUSTER_KEY, StackFile, load_stack_file

SHIPPED = sorted(p for p in (PROJECT_ROOT / "stacks").glob("Pulumi.*.yaml") if "local" not in p.name)
# The actions that take no resource, so no statement can scope them: reads, and Session Manager's agent
# (AWS's AWSCloud9SSMInstanceProfile grants these five on `*`).
AGENT = {"ssm:UpdateInstanceInformation", "ssmmessages:CreateControlChannel", "ssmmessages:CreateDataChannel",
         "ssmmessages:OpenControlChannel", "ssmmessages:OpenDataChannel"}
# A bucket two clusters of one account may both name as their existingBucket.
SHARED = {"aws": "gpufleet-shared-checkpoints", "alicloud": "gpufleet-shared-checkpoints",
          "tencentcloud": "gpufleet-shared-1250000000"}
COMPUTE = {"aws": "ec2.amazonaws.com", "alicloud": "ecs.aliyuncs.com", "tencentcloud": "cvm.qcloud.com"}


def _lower(value: dict) -> dict:
    return {str(key).lower(): item for key, item in value.items()}


def _listed(value) -> list:
    return value if isinstance(value, list) else [] if value is None else [value]


def _documents(value) -> list[dict]:
    """Every permission document in a resource's inputs: an object, or JSON text, with statements."""
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return []
    if isinstance(value, dict):
        if "statement" in _lower(value):
            return [_lower(value)]
        return [found for item in value.values() for found in _documents(item)]
    if isinstance(value, list):
        return [found for item in value for found in _documents(item)]
    return []


def _conditions(statement: dict) -> list[tuple[str, str, list[str]]]:
    """(operator, key, values) of each condition: AWS and Alibaba's StringEquals/StringLike, Tencent's string_equal,
    string_like and for_any_value:string_equal."""
    return [(operator.lower(), key, [str(v) for v in _listed(values)])
            for operator, keys in (statement.get("condition") or {}).items() for key, values in keys.items()]


def _statements(resources: list[dict]) -> list[dict]:
    statements = [_lower(s) for r in resources for d in _documents(r["inputs"]) for s in _listed(d["statement"])]
    return [s for s in statements if str(s.get("effect", "")).lower() == "allow"]


def _allows(statement: dict, action: str, resource: str, context: dict[str, str]) -> bool:
    """Whether the statement allows the action on the resource for a request with these condition values."""
    if not any(fnmatchcase(action, a) for a in map(str, _listed(statement.get("action")))):
        return False
    if not any(fnmatchcase(resource, r) for r in map(str, _listed(statement.get("resource")))):
        return False
    for operator, key, values in _conditions(statement):
        have = context.get(key)
        if have is None or not any(fnmatchcase(have, v) if "like" in operator else have == v for v in values):
            return False
    return True


def _owned(statements: list[dict]) -> list[tuple[str, str, dict[str, str]]]:
    """What a cluster's statements name: (action, a resource each names, the condition values it carries)."""
    def one(pattern: str) -> str:
        return pattern.replace("*", "x").replace("?", "x")

    return [(str(action), one(str(resource)), {key: one(values[0]) for _, key, values in _conditions(s) if values})
            for s in statements for action in _listed(s.get("action")) for resource in _listed(s.get("resource"))]


def _exempt(statement: dict) -> bool:
    actions = [str(a) for a in _listed(statement.get("action"))]
    return all(a.split(":", 1)[-1].startswith("Describe") or a in AGENT for a in actions)


def _preview(stack: str, path: Path, config: dict) -> tuple:
    stack_file = StackFile(name=stack, path=path, config=config)
    return spec_and_plan(stack_file)[1], run_program(stack_file).resources


def _twins(path: Path, storage: dict | None) -> tuple[tuple, tuple]:
    """The stack (its cluster name written out, as it defaults) and its twin, each previewed: (plan, resources)."""
    stack = load_stack_file(path)
    config = copy.deepcopy(stack.config)
    cluster = config[CLUSTER_KEY]
    cluster["name"] = spec_and_plan(stack)[1].name
    if storage:
        cluster["storage"] = storage
    own = _preview(stack.name, path, config)
    twin_plan, twin = _preview(f"{stack.name}-twin", path, config)
    # Ids the cloud assigns are unique; under mocks they are the resource's name, which the twin shares: renamed.
    text = json.dumps(twin, default=str)
    for name in sorted({r["name"] for r in twin}, key=len, reverse=True):
        text = re.sub(rf"(?<![\w-]){re.escape(name)}-id(?![\w-])", f"{name}-twin-id", text)
    return own, (twin_plan, json.loads(text))


def _assert_own(path: Path, storage: dict | None = None) -> None:
    (plan, resources), (twin_plan, twin) = _twins(path, storage)
    assert plan.identity != twin_plan.identity and plan.name == twin_plan.name
    statements = _statements(resources)
    assert statements, f"{path.name}: no grant found"
    trust = [s for s in statements if s.get("principal")]
    for statement in trust:  # the role's trust: the cloud's compute service alone may take it
        assert json.dumps(statement["principal"]).count('"') == 4 and COMPUTE[plan.cloud] in json.dumps(statement)
    owned = _owned([s for s in _statements(twin) if not s.get("principal") and not _exempt(s)])
    assert owned
    for statement in statements:
        if statement in trust or _exempt(statement):
            continue
        usable = [target for target in owned if _allows(statement, *target)]
        assert not usable, f"{path.name}: {statement} lets its nodes act on the twin's {usable}"


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_no_grant_of_a_shipped_stack_reaches_another_cluster(path):
    _assert_own(path)


@pytest.mark.parametrize("cloud", sorted(SHARED))
def test_no_grant_reaches_another_cluster_on_a_shared_existing_bucket(cloud):
    path = next(p for p in SHIPPED if load_stack_file(p).config[CLUSTER_KEY]["cloud"] == cloud)
    _assert_own(path, {"existingBucket": SHARED[cloud]})
