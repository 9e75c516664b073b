"""The preview's AWS resources as Terraform JSON, mapped through the provider's own schema.

Pulumi names a type `aws:ec2/launchTemplate:LaunchTemplate` and its inputs in camelCase, with one-element blocks
flattened to objects and repeated blocks pluralised (`tags` for the group's `tag` blocks); the provider wants
`aws_launch_template` and snake_case. Every name is looked up in the provider's schema, never guessed blindly: an input
the pinned provider does not know is skipped and reported, so a difference between pulumi-aws and the provider is seen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pulumi

from components.aws.validate.standins import mock_arn, mock_id, standins

# pulumi-aws maps most tokens by rule; these it names by hand (pulumi-aws provider/resources.go).
RENAMED_TYPES = {"aws:s3/bucketObjectv2:BucketObjectv2": "aws_s3_object"}


@dataclass(frozen=True)
class Skipped:
    """An input the pinned provider has no field for (or a resource type it does not have): not checked."""

    resource: str
    field: str
    reason: str


@dataclass
class Conversion:
    """Terraform JSON for the resources, and the way back from a Terraform address and path to ours."""

    resources: dict[str, dict[str, dict]] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    paths: dict[tuple, str] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)  # Terraform address -> the stand-in id of the resource
    skipped: list[Skipped] = field(default_factory=list)
    unresolved: list[tuple[str, str, str]] = field(default_factory=list)


def snake(name: str) -> str:
    """camelCase -> snake_case: `cidrIpv4` -> `cidr_ipv4` (for type names; fields are matched by `camel`)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def camel(name: str) -> str:
    """snake_case -> camelCase as the bridge names fields: `dns_a_record` -> `dnsARecord`."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _plurals(name: str) -> list[str]:
    """The bridge's names for a repeated block or list: `tag` -> `tags`, `policy` -> `policies`."""
    if name.endswith("y") and not name.endswith(("ay", "ey", "oy", "uy")):
        return [name[:-1] + "ies"]
    if name.endswith(("s", "x", "ch", "sh")):
        return [name + "es", name]
    return [name + "s"]


def _fields(schema: dict) -> dict[str, str]:
    """Pulumi's name -> the provider's, for every attribute and block of one schema block."""
    names: dict[str, str] = {}
    for name in (*schema.get("attributes", {}), *schema.get("block_types", {})):
        for form in _plurals(name):
            names.setdefault(camel(form), name)
    for name in (*schema.get("attributes", {}), *schema.get("block_types", {})):
        names[camel(name)] = name
    return names


def terraform_type(token: str, schemas: dict[str, dict]) -> str | None:
    """The provider's resource type for a pulumi-aws token, or None if the provider has no such resource."""
    if token in RENAMED_TYPES:
        return RENAMED_TYPES[token] if RENAMED_TYPES[token] in schemas else None
    _, module, name = token.split(":")
    for candidate in (f"aws_{module.split('/')[0]}_{snake(name)}", f"aws_{snake(name)}"):
        if candidate in schemas:
            return candidate
    return None


def tf_name(name: str) -> str:
    """A Terraform resource name for a Pulumi name: letters, digits, `_` and `-`, not starting with a digit."""
    cleaned = re.sub(r"[^A-Za-z0-9_-]", "_", name)
    return cleaned if re.match(r"[A-Za-z_]", cleaned) else f"r_{cleaned}"


class _Converter:
    def __init__(self, conversion: Conversion, known: dict[str, str], mocks: set[str], resource: str) -> None:
        self.conversion, self.known, self.mocks, self.resource = conversion, known, mocks, resource

    def scalar(self, value: Any, where: str) -> Any:
        """Assets become their file; mock ids and ARNs (also inside a policy document) their stand-ins."""
        if isinstance(value, pulumi.asset.FileAsset | pulumi.asset.FileArchive):
            return str(value.path)
        if not isinstance(value, str):
            return value
        if value in self.known:
            return self.known[value]
        for mock in re.findall(r"arn:mock:[^\s\"',]+", value):
            value = value.replace(mock, self.known.get(mock, mock))
        if value in self.mocks or "arn:mock:" in value:
            self.conversion.unresolved.append((self.resource, where, value))
        return value

    def value(self, value: Any, tf_type: Any, path: tuple, where: str) -> Any:
        """An attribute's value; objects inside follow the attribute's type (map keys are kept as written)."""
        if isinstance(tf_type, list) and tf_type[0] == "map":
            return {key: self.value(item, tf_type[1], (*path, key), f"{where}.{key}") for key, item in value.items()}
        if isinstance(tf_type, list) and tf_type[0] in ("list", "set") and isinstance(value, list):
            return [self.value(item, tf_type[1], (*path, i), f"{where}[{i}]") for i, item in enumerate(value)]
        if isinstance(tf_type, list) and tf_type[0] == "object" and isinstance(value, dict):
            # An object attribute (a route of a route table) needs every attribute in JSON: the rest are null.
            attributes = {name: {"type": kind} for name, kind in tf_type[1].items()}
            return {**dict.fromkeys(attributes), **self.block(value, {"attributes": attributes}, path, where)}
        if isinstance(value, list):
            return [self.value(item, None, (*path, i), f"{where}[{i}]") for i, item in enumerate(value)]
        return self.scalar(value, where)

    def block(self, inputs: dict[str, Any], schema: dict, path: tuple, where: str) -> dict[str, Any]:
        """One block's inputs: each key found in the block's schema under the provider's name for it."""
        body: dict[str, Any] = {}
        attributes, blocks, names = schema.get("attributes", {}), schema.get("block_types", {}), _fields(schema)
        for key, value in inputs.items():
            ours = f"{where}.{key}" if where else key
            if value is None:
                continue
            name = names.get(key)
            if name is None:
                self.conversion.skipped.append(Skipped(self.resource, ours, "the provider's schema has no such field"))
                continue
            here = (*path, name)
            self.conversion.paths[here] = ours
            if name in attributes:
                body[name] = self.value(value, attributes[name].get("type"), here, ours)
                continue
            nested = blocks[name]
            items = value if isinstance(value, list) else [value]
            converted = [self.block(item, nested["block"], (*here, i), f"{ours}[{i}]" if isinstance(value, list)
                                    else ours) for i, item in enumerate(items)]
            body[name] = converted[0] if nested["nesting_mode"] == "single" else converted
        return body


def _autonamed(inputs: dict[str, Any], schema: dict, name: str) -> dict[str, Any]:
    """Pulumi names a resource that has a `name` field and was given none; here after its mock's `name` output."""
    attribute = schema["block"]["attributes"].get("name", {})
    settable = attribute.get("optional") or attribute.get("required")
    if not settable or "name" in inputs or "namePrefix" in inputs:
        return inputs
    return {"name": name, **inputs}


def convert(records: list[dict[str, Any]], schemas: dict[str, dict], region: str) -> Conversion:
    """Terraform JSON `resource` blocks for the preview's AWS resources (components and other clouds left out)."""
    conversion = Conversion()
    aws = [r for r in records if r["options"].get("custom") and r["type"].startswith("aws:")]
    typed = []
    for record in aws:
        tf_type = terraform_type(record["type"], schemas)
        if tf_type is None:
            conversion.skipped.append(Skipped(record["name"], "", f"the provider has no resource for {record['type']}"))
            continue
        typed.append(({**record, "inputs": _autonamed(record["inputs"], schemas[tf_type], record["name"])}, tf_type))
    known = standins(((r["type"], t, r["name"], r["inputs"]) for r, t in typed), region)
    mocks = {mock_id(r["name"]) for r in aws} | {mock_arn(r["type"], r["name"]) for r in aws}
    for record, tf_type in typed:
        name = tf_name(record["name"])
        conversion.names[f"{tf_type}.{name}"] = record["name"]
        if mock_id(record["name"]) in known:
            conversion.ids[f"{tf_type}.{name}"] = known[mock_id(record["name"])]
        converter = _Converter(conversion, known, mocks, record["name"])
        body = converter.block(record["inputs"], schemas[tf_type]["block"], (tf_type, name), "")
        conversion.resources.setdefault(tf_type, {})[name] = body
    return conversion
