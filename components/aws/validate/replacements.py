"""What terraform-provider-aws itself plans for a change: the resources of one preview written as Terraform state
(as if deployed), those of another as the configuration, and `terraform plan -refresh=false` between them, offline.

The configuration refers to another resource where the program's input took that resource's output (its property
dependencies): an id as `${type.name.id}`, a computed output (`COMPUTED`, a launch template's `latest_version`) as
`${type.name.<attribute>}`, so the provider sees what the engine sees: a replaced resource's new id, an updated
template's new version. Each resource's planned actions come back under the program's names.

One plan-time call reaches EC2: an instance whose launch template version changes asks EC2 which template and
version it was launched from (its `aws:ec2launchtemplate:*` tags, DescribeTags) and the template's versions
(DescribeLaunchTemplates) to decide whether it is replaced (aws_instance's CustomizeDiff). `Ec2Stub` answers those two
from the deployed state, on this machine: each instance launched from its template's version 1."""

from __future__ import annotations

import json
import tempfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs
from xml.sax.saxutils import escape

from components.aws.cluster import COMPUTED
from components.aws.validate.check import CONFIG_FILE, provider_block
from components.aws.validate.convert import Conversion, convert, snake
from components.aws.validate.toolchain import (
    PROVIDER_SOURCE,
    Toolchain,
    find_toolchain,
    init,
    required_providers,
    resource_schemas,
    terraform,
)

STATE_FILE = "prior.tfstate"
PLAN_FILE = "change.tfplan"


LAUNCHED_FROM = ("aws:ec2launchtemplate:id", "aws:ec2launchtemplate:version")
EC2_XMLNS = "http://ec2.amazonaws.com/doc/2016-11-15/"


class PlanFailed(Exception):
    """Terraform could not plan the change (its diagnostics)."""


def _items(rows: list[dict[str, str]]) -> str:
    return "".join("<item>" + "".join(f"<{k}>{escape(v)}</{k}>" for k, v in row.items()) + "</item>" for row in rows)


class _Ec2(BaseHTTPRequestHandler):
    """EC2's query API for the two calls an instance's plan makes; `server.tags` (instance id -> tag -> value) and
    `server.templates` (template id -> name) are the deployed state's."""

    def do_POST(self) -> None:
        asked = {key: values[0] for key, values in parse_qs(self.rfile.read(int(self.headers["Content-Length"]))
                                                             .decode()).items()}
        action = asked.get("Action")
        if action == "DescribeTags":
            filters = {asked[f"Filter.{n}.Name"]: asked[f"Filter.{n}.Value.1"] for n in range(1, 5)
                       if f"Filter.{n}.Name" in asked}
            tags = self.server.tags.get(filters.get("resource-id"), {})
            rows = [{"resourceId": filters["resource-id"], "resourceType": "instance", "key": key, "value": value}
                    for key, value in tags.items() if key == filters.get("key", key)]
            body = f"<requestId>0</requestId><tagSet>{_items(rows)}</tagSet>"
        elif action == "DescribeLaunchTemplates":
            wanted = asked.get("LaunchTemplateId.1")
            known = wanted in self.server.templates
            rows = [{"launchTemplateId": wanted, "launchTemplateName": self.server.templates[wanted],
                     "defaultVersionNumber": "1", "latestVersionNumber": "1"}] if known else []
            body = f"<requestId>0</requestId><launchTemplates>{_items(rows)}</launchTemplates>"
        else:
            self.send_response(400)
            self.end_headers()
            return
        payload = f'<{action}Response xmlns="{EC2_XMLNS}">{body}</{action}Response>'.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/xml")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *_: Any) -> None:
        """Quiet: the plan's own output says what went wrong."""


@contextmanager
def ec2_stub(tags: Mapping[str, Mapping[str, str]], templates: Mapping[str, str]) -> Iterator[str]:
    """An EC2 endpoint on this machine answering from the deployed state; yields its URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ec2)
    server.tags, server.templates = tags, templates
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _referring(value: Any, expressions: Mapping[str, str]) -> Any:
    """A converted value with every string that is a dependency's output replaced by the expression naming it."""
    if isinstance(value, dict):
        return {key: _referring(item, expressions) for key, item in value.items()}
    if isinstance(value, list):
        return [_referring(item, expressions) for item in value]
    return expressions.get(value, value) if isinstance(value, str) else value


def configuration(records: list[Mapping[str, Any]], schemas: dict[str, dict], region: str) -> Conversion:
    """The after-change resources as Terraform JSON, referring to their dependencies' outputs."""
    conversion = convert(records, schemas, region)
    addresses = {name: address for address, name in conversion.names.items()}
    by_name = {record["name"]: record for record in records if record["options"].get("custom")}
    for address, name in conversion.names.items():
        tf_type, tf_resource = address.split(".", 1)
        record = by_name[name]
        expressions: dict[str, str] = {}
        for dependency in {n for names in record["options"].get("propertyDependencies", {}).values() for n in names}:
            if dependency not in addresses:
                continue
            dep_address = addresses[dependency]
            if conversion.ids.get(dep_address):
                expressions[conversion.ids[dep_address]] = f"${{{dep_address}.id}}"
            for output, value in COMPUTED.get(by_name[dependency]["type"], {}).items():
                expressions[str(value)] = f"${{{dep_address}.{snake(output)}}}"
        body = conversion.resources[tf_type][tf_resource]
        conversion.resources[tf_type][tf_resource] = _referring(body, expressions)
    return conversion


def _stand_in(schema: Mapping[str, Any], name: str) -> Any:
    """A value of the attribute's type (an empty list or map, zero, false, a placeholder string); a block: none."""
    kind = schema.get("attributes", {}).get(name, {}).get("type")
    if kind is None or (isinstance(kind, list) and kind[0] in ("list", "set")):
        return []
    if isinstance(kind, list):
        return {} if kind[0] == "map" else None
    return {"string": "stand-in", "number": 0, "bool": False}.get(kind)


def prior_state(conversion: Conversion, records: list[Mapping[str, Any]], schemas: dict[str, dict],
                planned: Mapping[str, Mapping[str, Any]], version: str) -> dict[str, Any]:
    """Terraform state (format 4) holding the before-change resources as deployed: the values the provider plans
    for creating them (their configuration and the defaults it fills in), their stand-in ids, and the outputs a
    dependent reads (COMPUTED)."""
    by_name = {record["name"]: record for record in records}
    resources = []
    for address, name in conversion.names.items():
        tf_type, tf_resource = address.split(".", 1)
        attributes = {**planned[address], "id": conversion.ids.get(address) or name}
        for output, value in COMPUTED.get(by_name[name]["type"], {}).items():
            attributes[snake(output)] = value
        resources.append({"mode": "managed", "type": tf_type, "name": tf_resource,
                          "provider": f'provider["{PROVIDER_SOURCE}"]',
                          "instances": [{"schema_version": schemas[tf_type].get("version", 0),
                                         "attributes": attributes, "sensitive_attributes": []}]})
    return {"version": 4, "terraform_version": version, "serial": 1, "lineage": "gpufleet-offline-prior",
            "outputs": {}, "resources": resources}


def launched_from(state: Mapping[str, Any]) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """What EC2 knows of the deployed instances: each one's template and version (the tags EC2 gives an instance
    launched from a template), and each template's name."""
    templates, tags = {}, {}
    for resource in state["resources"]:
        attributes = resource["instances"][0]["attributes"]
        if resource["type"] == "aws_launch_template":
            templates[attributes["id"]] = attributes.get("name") or resource["name"]
        for template in (attributes.get("launch_template") or []) if resource["type"] == "aws_instance" else []:
            tags[attributes["id"]] = dict(zip(LAUNCHED_FROM, (template["id"], str(template["version"])),
                                              strict=True))
    return tags, templates


@dataclass(frozen=True)
class Planned:
    """What Terraform plans for one resource: its actions (`no-op`, `update`, `delete`+`create` or `create`+`delete`
    for a replacement, `create`, `delete`) and the attribute paths that force a replacement."""

    actions: tuple[str, ...]
    replace_paths: tuple[str, ...]

    @property
    def replaced(self) -> bool:
        return {"create", "delete"} <= set(self.actions)


class ChangePlanner:
    """One working directory with the provider initialised: `deploy` a preview's resources as state, then `plan`
    another preview's against it, as often as wanted."""

    def __init__(self, workdir: Path, region: str, toolchain: Toolchain | None = None, cache: Path | None = None):
        self.workdir, self.region = workdir, region
        self.toolchain = toolchain or find_toolchain()
        self.base = {"terraform": required_providers(self.toolchain), "provider": provider_block(region)}
        (workdir / CONFIG_FILE).write_text(json.dumps(self.base))
        init(self.toolchain, workdir)
        self.schemas = resource_schemas(self.toolchain, workdir, cache)
        shown = terraform(self.toolchain, workdir, "version", "-json")
        self.version = json.loads(shown.stdout)["terraform_version"]

    def _plan(self, resources: dict, provider: dict, state: dict | None) -> dict[str, Any]:
        (self.workdir / CONFIG_FILE).write_text(json.dumps({**self.base, "provider": provider,
                                                            "resource": resources}))
        (self.workdir / STATE_FILE).write_text(json.dumps(state or {"version": 4, "resources": []}))
        planned = terraform(self.toolchain, self.workdir, "plan", "-input=false", "-lock=false", "-refresh=false",
                            "-no-color", f"-state={STATE_FILE}", f"-out={PLAN_FILE}")
        if planned.returncode != 0:
            raise PlanFailed(planned.stderr.strip() or planned.stdout.strip())
        return json.loads(terraform(self.toolchain, self.workdir, "show", "-json", PLAN_FILE).stdout)

    def deploy(self, records: list[Mapping[str, Any]]) -> dict[str, Any]:
        """The state the resources leave once made: what the provider plans for creating them, each attribute only
        the apply would know (an id, an ARN, a computed list) with a stand-in of its type, as a real state holds
        some value there (left empty, the next plan would find a computed ForceNew attribute unknown, and replace)."""
        conversion = convert(records, self.schemas, self.region)
        shown = self._plan(conversion.resources, self.base["provider"], None)
        planned = {resource["address"]: dict(resource["values"])
                   for resource in shown["planned_values"]["root_module"].get("resources", [])}
        for change in shown.get("resource_changes", []):
            schema = self.schemas[change["type"]]["block"]
            for name, unknown in (change["change"].get("after_unknown") or {}).items():
                if unknown is True and planned[change["address"]].get(name) is None:
                    planned[change["address"]][name] = _stand_in(schema, name)
        return prior_state(conversion, records, self.schemas, planned, self.version)

    def plan(self, state: dict[str, Any], records: list[Mapping[str, Any]]) -> dict[str, Planned]:
        """Our resource name -> what the provider plans for it, from `state` to these resources."""
        wanted = configuration(records, self.schemas, self.region)
        with ec2_stub(*launched_from(state)) as ec2:
            provider = {"aws": {**self.base["provider"]["aws"], "endpoints": [{"ec2": ec2}]}}
            shown = self._plan(wanted.resources, provider, state)
        names = {f"{resource['type']}.{resource['name']}": resource["name"] for resource in state["resources"]}
        names |= wanted.names
        return {names.get(change["address"], change["address"]): Planned(
                    tuple(change["change"]["actions"]),
                    tuple(".".join(map(str, path)) for path in change["change"].get("replace_paths", ())))
                for change in shown.get("resource_changes", []) if change.get("mode") == "managed"}


def planned_actions(before: list[Mapping[str, Any]], after: list[Mapping[str, Any]], region: str,
                    toolchain: Toolchain | None = None, cache: Path | None = None) -> dict[str, Planned]:
    """Our resource name -> what Terraform plans for it, the `before` resources deployed, the `after` ones
    configured."""
    with tempfile.TemporaryDirectory(prefix="gpufleet-tf-change-") as tmp:
        planner = ChangePlanner(Path(tmp), region, toolchain, cache)
        return planner.plan(planner.deploy(before), after)
