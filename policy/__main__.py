"""The CrossGuard pack: `pulumi preview --policy-pack policy`. Constructing PolicyPack starts its server and serves
until the engine is done, so the policies are built in policy/crossguard.py, where tests can import them."""

import sys
from pathlib import Path

# The engine runs this file from policy/; the rules import policy, clouds, plan and spec from the project root.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import EnforcementLevel, PolicyPack

from policy.crossguard import PACK_NAME, policies

PolicyPack(name=PACK_NAME, policies=policies(), enforcement_level=EnforcementLevel.MANDATORY)
