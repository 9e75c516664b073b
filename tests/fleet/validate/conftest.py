"""The toolchain, the provider's schema and the shipped AWS stacks' previews, each made once per test session.

The provider tests skip only where Terraform or the provider is not installed (the reason names what is missing).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from components.aws.validate.check import CONFIG_FILE, provider_block
from components.aws.validate.toolchain import find_toolchain, init, required_providers, resource_schemas
from fleet.preview import run_program
from fleet.stacks import spec_and_plan
from spec.errors import ToolchainMissing
from spec.stackfile import load_stack_file

ROOT = Path(__file__).resolve().parents[3]
AWS_STACKS = sorted((ROOT / "stacks").glob("Pulumi.aws-*.yaml"))


def pytest_generate_tests(metafunc):
    """`aws_stack`: each shipped AWS stack by name (a module importing `conftest` may get another directory's)."""
    if "aws_stack" in metafunc.fixturenames:
        metafunc.parametrize("aws_stack", [path.stem.removeprefix("Pulumi.") for path in AWS_STACKS])


@pytest.fixture(scope="session")
def toolchain():
    try:
        return find_toolchain()
    except ToolchainMissing as missing:
        pytest.skip(str(missing))


@pytest.fixture(scope="session")
def schemas(toolchain):
    with tempfile.TemporaryDirectory(prefix="gpufleet-schema-") as tmp:
        workdir = Path(tmp)
        base = {"terraform": required_providers(toolchain), "provider": provider_block("us-east-1")}
        (workdir / CONFIG_FILE).write_text(json.dumps(base))
        init(toolchain, workdir)
        return resource_schemas(toolchain, workdir)


@pytest.fixture(scope="session")
def previews():
    """stack name -> (plan, preview) of every shipped AWS stack, as `fleet plan` makes them."""
    result = {}
    for path in AWS_STACKS:
        stack = load_stack_file(path)
        _, plan = spec_and_plan(stack)
        result[stack.name] = (plan, run_program(stack))
    return result
