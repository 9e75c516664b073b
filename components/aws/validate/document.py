"""Terraform JSON written one key per line, remembering which configuration path each line holds.

Terraform reports a diagnostic at a line and column of the configuration file; this map turns that line back into the
attribute the provider rejected.
"""

from __future__ import annotations

import json
from typing import Any


def dump(document: dict[str, Any]) -> tuple[str, dict[int, tuple]]:
    """The document as indented JSON, and for each line (1-based) the path of the key or element on it."""
    lines: list[str] = []
    where: dict[int, tuple] = {}

    def emit(value: Any, path: tuple, indent: str, head: str, tail: str) -> None:
        where[len(lines) + 1] = path
        if isinstance(value, dict) and value:
            lines.append(f"{indent}{head}{{")
            items = list(value.items())
            for index, (key, item) in enumerate(items):
                emit(item, (*path, key), indent + "  ", f"{json.dumps(key)}: ", "," if index < len(items) - 1 else "")
            lines.append(f"{indent}}}{tail}")
        elif isinstance(value, list) and value:
            lines.append(f"{indent}{head}[")
            for index, item in enumerate(value):
                emit(item, (*path, index), indent + "  ", "", "," if index < len(value) - 1 else "")
            lines.append(f"{indent}]{tail}")
        else:
            lines.append(f"{indent}{head}{json.dumps(value)}{tail}")

    emit(document, (), "", "", "")
    return "\n".join(lines) + "\n", where
