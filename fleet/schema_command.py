"""`fleet schema`: the JSON Schema editors use to complete and check the gpufleet:cluster object."""

from __future__ import annotations

import json
from pathlib import Path

from plan.paths import PROJECT_ROOT
from spec.cluster import ClusterSpec

SCHEMA_PATH = PROJECT_ROOT / "schema" / "cluster.schema.json"


def schema_text() -> str:
    schema = ClusterSpec.model_json_schema(by_alias=True)
    schema["properties"].pop("region", None)
    schema["$id"] = "https://gpufleet.dev/schema/cluster.schema.json"
    schema["title"] = "gpufleet:cluster"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def register(subparsers) -> None:
    parser = subparsers.add_parser("schema", help="print the JSON Schema of the gpufleet:cluster object")
    parser.add_argument("--check", metavar="PATH", help="exit 1 if PATH differs from the current schema")
    parser.set_defaults(run=run)


def run(args) -> int:
    text = schema_text()
    if args.check:
        current = Path(args.check).read_text(encoding="utf-8") if Path(args.check).is_file() else ""
        if current != text:
            print(f"{args.check} is out of date: run `fleet schema > {args.check}`")
            return 1
        return 0
    print(text, end="")
    return 0
