"""The stack's market.spotStrategy, as each cloud's API names it (clouds/<cloud>.py `spot_strategies`); a cloud whose
spot takes no allocation strategy plans none, rather than echoing a setting nothing reads."""

from __future__ import annotations

import pytest
from spec_cases import shipped_spec

from clouds.plans import plan_for

STRATEGIES = ("price-capacity-optimized", "capacity-optimized", "lowest-price")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_each_cloud_plans_the_strategy_under_its_apis_name(strategy):
    planned = {stack: plan_for(shipped_spec(stack, market={"spotStrategy": strategy}), stack).market.spot_strategy
               for stack in ("aws-g5-spot", "ali-spot", "tencent-spot", "local")}
    assert planned == {"aws-g5-spot": strategy, "ali-spot": "COST_OPTIMIZED", "tencent-spot": "",
                       "local": "emulated" if strategy == "price-capacity-optimized" else ""}
