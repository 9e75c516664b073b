"""One realizer per target behind a small registry; each is imported only when its cloud is used."""

from __future__ import annotations

import importlib
from typing import Any

from components.plan.model import ClusterPlan

REALIZERS = {
    "aws": "components.aws.cluster",
    "alicloud": "components.alicloud.cluster",
    "tencentcloud": "components.tencentcloud.cluster",
    "local": "components.realizers.local_outputs",
}


def realize(plan: ClusterPlan) -> dict[str, Any]:
    """Declare the plan's resources on its cloud; returns the stack outputs."""
    return importlib.import_module(REALIZERS[plan.cloud]).realize(plan)
