"""The `fleet` command: parse arguments, dispatch, and turn every user error into a message and an exit code."""

from __future__ import annotations

import argparse
import sys

from components.errors import SpecError

EXIT_INVALID = 2


def _stack_args(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--stack", help="stack name: reads stacks/Pulumi.NAME.yaml (default: local)")
    where.add_argument("--stack-file", help="path of a stack file")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fleet", description="gpufleet: multi-node GPU training clusters as code.")
    commands = parser.add_subparsers(dest="command", required=True)
    plan = commands.add_parser("plan", help="preview a stack's resources offline (no Pulumi CLI, no credentials)")
    _stack_args(plan)
    schema = commands.add_parser("schema", help="print the JSON Schema of the gpufleet:cluster object")
    schema.add_argument("--check", metavar="PATH", help="exit 1 if PATH differs from the current schema")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "plan":
            from fleet import plan_command
            return plan_command.run(args)
        from fleet import schema_command
        return schema_command.run(args)
    except SpecError as error:
        print(error.render(), file=sys.stderr)
        return EXIT_INVALID
    except BrokenPipeError:
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
