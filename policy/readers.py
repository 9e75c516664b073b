"""The policy reader of every registered cloud with Pulumi resources (policy/clouds/<cloud>.py), found through the
cloud registry; a resource of a package no reader owns is refused, never waved through."""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType

from clouds import CLOUDS
from policy.base import Reader, package_of

# Packages of resources that are not a cloud's: the engine's own (stack, providers) and gpufleet's components.
NOT_A_CLOUD = ("pulumi", "gpufleet")


@cache
def modules() -> tuple[ModuleType, ...]:
    return tuple(importlib.import_module(f"policy.clouds.{name}") for name, cloud in CLOUDS.items()
                 if cloud.pulumi_package)


def readers() -> tuple[Reader, ...]:
    return tuple(module.READER for module in modules())


def reader_for(kind: str) -> Reader | None:
    """The reader of the cloud a type token belongs to, or None."""
    return next((r for r in readers() if r.package == package_of(kind)), None)
