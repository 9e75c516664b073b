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


def record(kind: str, inputs: dict, name: str = "r") -> dict:
    """A crafted resource as the policy engine hands it over (a custom resource)."""
    return {"type": kind, "name": name, "parent": None, "inputs": inputs, "options": {"custom": True}}


def messages(kind: str, inputs: dict, rule: str) -> list[str]:
    """What one rule says of one crafted resource."""
    return [f["message"] for f in evaluate([record(kind, inputs)]) if f["policy"] == rule]


def stack(resources: list[tuple[str, dict]], rule: str) -> list[tuple[str, str]]:
    """(resource, message) for what one stack rule says of crafted resources named r0, r1, ..."""
    records = [record(kind, inputs, f"r{i}") for i, (kind, inputs) in enumerate(resources)]
    return [(f["resource"], f["message"]) for f in evaluate(records) if f["policy"] == rule]
