"""Reads a Pulumi stack file the way the Pulumi engine would, for tools that run without it (mocks, the CLI)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from components.errors import Problem, SpecError

CLUSTER_KEY = "gpufleet:cluster"


@dataclass(frozen=True)
class StackFile:
    """A stack's name and its `config:` map, keys as written (`gpufleet:cluster`, `aws:region`, ...)."""

    name: str
    path: Path
    config: dict[str, Any]

    def engine_config(self) -> dict[str, str]:
        """Config as the engine hands it to a program: every value a string, objects as JSON."""
        return {key: value if isinstance(value, str) else json.dumps(value) for key, value in self.config.items()}


def stack_path(project_dir: Path, stack: str) -> Path:
    """Where Pulumi keeps a stack's file under this project's `stackConfigDir: stacks`."""
    return project_dir / "stacks" / f"Pulumi.{stack}.yaml"


def stack_name_of(path: Path) -> str:
    """`Pulumi.aws-p5.yaml` -> `aws-p5`; other file names keep their stem."""
    stem = path.name.removesuffix(".yaml").removesuffix(".yml")
    return stem.removeprefix("Pulumi.")


def load_stack_file(path: Path) -> StackFile:
    """Parse a stack file, turning YAML and shape errors into a SpecError that names the file and line."""
    source = str(path)
    if not path.is_file():
        what = "is a directory, not a stack file" if path.is_dir() else "does not exist"
        raise SpecError([Problem("stack", f"file {source} {what}.",
                                 "pass --stack NAME for stacks/Pulumi.NAME.yaml or --stack-file PATH.")])
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        reason = getattr(error, "problem", None) or str(error)
        raise SpecError([Problem(f"{source}:{line.strip()}", f"YAML does not parse at{line}: {reason}.",
                                 "fix the indentation or quoting there (a YAML linter shows it).")],
                        source) from None
    config = (document or {}).get("config") if isinstance(document, dict) else None
    if not isinstance(config, dict):
        raise SpecError([Problem("config", "the stack file has no `config:` map.",
                                 f"put the cluster under `config: {{{CLUSTER_KEY}: {{...}}}}`.")], source)
    return StackFile(name=stack_name_of(path), path=path, config=config)
