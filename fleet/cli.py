"""The `fleet` command: parse arguments, dispatch, and turn every user error into a message and an exit code.

Each subcommand is a module with `register(subparsers)` and `run(args) -> int`; adding one is a line in COMMANDS.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from spec.errors import SpecError

EXIT_INVALID = 2
COMMANDS = ("fleet.plan_command", "fleet.schema_command", "fleet.local_command", "fleet.cost_command",
            "fleet.health_command", "fleet.image_command", "fleet.heal_command")


def add_stack_args(parser: argparse.ArgumentParser, json_flag: bool = True) -> None:
    """`--stack NAME | --stack-file PATH`, shared by every command that reads a stack."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--stack", help="stack name: reads stacks/Pulumi.NAME.yaml (default: local)")
    where.add_argument("--stack-file", help="path of a stack file")
    if json_flag:
        parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fleet", description="gpufleet: multi-node GPU training clusters as code.")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except SpecError as error:
        print(error.render(), file=sys.stderr)
        return EXIT_INVALID
    except BrokenPipeError:
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
