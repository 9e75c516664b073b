"""Small readers for crafted-resource tests."""

from __future__ import annotations

from pathlib import Path

from policy.rules import evaluate

STACKS = sorted(Path(__file__).resolve().parents[2].glob("stacks/Pulumi.*.yaml"))


def first(resources: list[dict], token: str, name_part: str = "") -> dict:
    """The first resource of a type (and name fragment) in a recorded stack."""
    return next(r for r in resources if r["type"] == token and name_part in r["name"])


def fired(resources: list[dict]) -> set[str]:
    """Names of the policies that found something."""
    return {v["policy"] for v in evaluate(resources)}
