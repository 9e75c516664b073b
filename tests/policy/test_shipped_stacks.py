"""Every shipped stack is quiet under every rule, advisory ones included."""

from __future__ import annotations

import pytest
from policy_helpers import STACKS

from policy.rules import evaluate


@pytest.mark.parametrize("path", STACKS, ids=lambda p: p.name)
def test_shipped_stack_is_quiet(path, previews):
    name = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    assert evaluate(previews[name]) == []
