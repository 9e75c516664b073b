"""Reads a Pulumi stack file the way the Pulumi engine would, for tools that run without it (mocks, the CLI).

Whatever the file holds, the answer is a StackFile or a SpecError that names the file and says what to do: a file
that cannot be read, is not text, is in an encoding no editor should have saved it in, holds a control character
(comments included), repeats a key or a `<<:` merge (YAML would keep the last one silently; so would JSON, in a
cluster written as a JSON string), holds half a character (a lone surrogate escape), writes a number YAML 1.1
and 1.2 read differently, nests or expands aliases beyond any stack's size, or does not parse; and config keys that
nothing would read, or that hold a provider's credentials in plain text (spec/configkeys.py).
"""

from __future__ import annotations

import codecs
import json
import re
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from spec.clouds import PROVIDER_KEYS, REGION_KEYS
from spec.configkeys import CLUSTER_KEY, config_key_problems
from spec.errors import Problem, SpecError

MAX_BYTES = 256 * 1024
MAX_DEPTH = 64
MAX_NODES = 100_000  # values after every alias is expanded (an 800-byte "billion laughs" file holds 10^9)
PULUMI_STACK_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")  # docs/cloud-facts.md#limits-on-every-cloud
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_MERGE = "tag:yaml.org,2002:merge"
_INT, _FLOAT = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
# Numbers YAML 1.1 reads otherwise than YAML 1.2 (docs/cloud-facts.md#yaml-numbers): a leading zero (octal in 1.1 and
# in Pulumi's go-yaml, decimal in 1.2), 0b binary, base-60 (1:30 is 90) and digit-group underscores.
_YAML11_NUMBER = re.compile(r"[-+]?(0[0-9_]+|0b[01_]+|[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?|[0-9.]*_[0-9_.]*)")
# Tab, line feed and carriage return are the only control characters YAML lets a file hold.
_LAYOUT = "\t\n\r"


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


def stack_name_problem(stack: str) -> str | None:
    """Why Pulumi would refuse this stack name, or None."""
    if PULUMI_STACK_NAME.fullmatch(stack):
        return None
    if not stack or len(stack) > 100:
        return f"stack name {stack!r} has {len(stack)} characters; Pulumi takes 1 to 100"
    bad = sorted({c for c in stack if not PULUMI_STACK_NAME.fullmatch(c)})
    return f"stack name {stack!r} has {', '.join(repr(c) for c in bad)}; Pulumi takes letters, digits, -, _ and ."


class _Refused(yaml.YAMLError):
    """A document this loader will not build, with the path of keys where it stopped and the fix."""

    def __init__(self, where: str, message: str, fix: str, mark: yaml.Mark | None = None) -> None:
        super().__init__(message)
        self.where, self.message, self.fix, self.mark = where, message, fix, mark


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, stricter where YAML is silently lax: a key given twice in one map is refused, nesting
    and the values aliases expand to are bounded, and timestamps stay strings (as the engine keeps them)."""

    yaml_implicit_resolvers = {first: [(tag, regex) for tag, regex in resolvers if tag != _TIMESTAMP]
                               for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.keys: list[str] = []

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        label = index.value if isinstance(index, yaml.ScalarNode) else ("" if index is None else str(index))
        self.keys.append(label)
        try:
            if len(self.keys) > MAX_DEPTH:
                raise _Refused(self.where(), f"nests more than {MAX_DEPTH} levels deep",
                               "flatten it: a stack's settings are a few levels deep.", self.peek_event().start_mark)
            node = super().compose_node(parent, index)
        finally:
            self.keys.pop()
        if (isinstance(node, yaml.ScalarNode) and node.tag in (_INT, _FLOAT) and node.style is None
                and _YAML11_NUMBER.fullmatch(node.value)):
            raise _Refused(self.where(label), f"{node.value} is a number YAML 1.1 reads otherwise than YAML 1.2 (a "
                           "leading zero is octal to one and decimal to the other, 1:30 is 90, 0b binary)",
                           f"write it in plain decimal digits without a leading zero, or in quotes ('{node.value}') "
                           "if it is text.", node.start_mark)
        return node

    def where(self, *more: str) -> str:
        """The path of keys to the node being composed (`gpufleet:cluster.network`), `config.` left out."""
        keys = [key for key in (*self.keys, *more) if key]
        text = ".".join(keys[:6]) + ("..." if len(keys) > 6 else "")
        return text.removeprefix("config.") or "the file"

    def compose_mapping_node(self, anchor: str | None) -> yaml.MappingNode:
        node = super().compose_mapping_node(anchor)
        seen: dict[Any, yaml.Node] = {}
        merges = [key_node for key_node, _ in node.value if key_node.tag == _MERGE]
        if len(merges) > 1:
            lines = " and ".join(str(key_node.start_mark.line + 1) for key_node in merges)
            raise _Refused(self.where("<<"), f"merges more than once into the same map (lines {lines}); YAML would "
                           "silently keep one of them", "merge once, with a list: `<<: [*first, *second]` (the first "
                           "named wins a key both hold), or write the keys out.", merges[1].start_mark)
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE:
                continue
            key = self.construct_object(key_node)
            if key in seen:
                lines = f"lines {seen[key].start_mark.line + 1} and {key_node.start_mark.line + 1}"
                raise _Refused(self.where(str(key)), f"is given twice in the same map ({lines}); YAML would silently "
                               "keep only the last", "keep one of them.")
            seen[key] = key_node
        return node


def _expanded_size(root: yaml.Node) -> int:
    """Values in the document once every alias is expanded, counted without expanding them; an alias inside the
    value it names is refused."""
    sizes: dict[int, int] = {}
    pending: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in pending:
            raise _Refused("the file", "has an alias inside the value it names, which never ends once expanded",
                           "write the value out instead of the alias.", node.start_mark)
        pending.add(key)
        children = node.value if isinstance(node, yaml.SequenceNode) else (
            [part for pair in node.value for part in pair] if isinstance(node, yaml.MappingNode) else [])
        total = 1
        for child in children:
            total = min(total + size(child), MAX_NODES + 1)
        pending.discard(key)
        sizes[key] = total
        return total

    return size(root)


def _decode(data: bytes, source: str) -> str:
    """Text in the encodings editors write: UTF-8 with or without a BOM, UTF-16/32 with one; else which it is."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(encoding)
            except UnicodeDecodeError as error:
                raise _file_error(source, f"starts with a {encoding.upper()} byte-order mark but is not valid "
                                  f"{encoding.upper()} ({error.reason} at byte {error.start}).",
                                  "save it again as UTF-8.") from None
    if b"\x00" in data:
        halves = data[1::2].count(0), data[0::2].count(0)
        if max(halves) > len(data) // 4:
            raise _file_error(source, "looks like UTF-16 without a byte-order mark.",
                              "save it as UTF-8 (or as UTF-16 with a BOM).")
        raise _file_error(source, "is not a text file (it holds NUL bytes).",
                          "pass the stack's YAML file: --stack NAME for stacks/Pulumi.NAME.yaml, or --stack-file PATH.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        byte = data[error.start]
        raise _file_error(source, f"is not UTF-8: byte 0x{byte:02X} on line {line} is not UTF-8; it reads as Latin-1 "
                          f"(ISO-8859-1 / Windows-1252) {bytes([byte]).decode('cp1252', 'replace')!r}.",
                          f"save it as UTF-8 (in your editor, or `iconv -f latin1 -t utf-8 {source}`).") from None


def _file_error(source: str, message: str, fix: str) -> SpecError:
    return SpecError([Problem("stack", f"file {source} {message}", fix)], source)


def _read(path: Path) -> bytes:
    """The file's bytes, at most MAX_BYTES + 1 of them; every OS error as a SpecError naming the file."""
    source = str(path)
    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            raise _file_error(source, "is a directory, not a stack file.",
                              "pass --stack NAME for stacks/Pulumi.NAME.yaml or --stack-file PATH.")
        if not stat.S_ISREG(info.st_mode):
            raise _file_error(source, "is not a regular file (a pipe, socket or device).",
                              "pass the path of the stack's YAML file.")
        with path.open("rb") as file:
            return file.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise _file_error(source, "does not exist.",
                          "pass --stack NAME for stacks/Pulumi.NAME.yaml or --stack-file PATH.") from None
    except PermissionError:
        raise _file_error(source, "cannot be read: permission denied.",
                          f"make it readable (`ls -l {source}` shows who may read it), or run as its owner.") from None
    except OSError as error:
        raise _file_error(source, f"cannot be read: {error.strerror or error}.",
                          "check the path and the disk, then run the command again.") from None


def _control_characters(text: str, source: str) -> None:
    """A control character anywhere, a comment included (a form feed, a terminal colour code pasted from a shell):
    YAML refuses most of them and the rest would reach a node's user-data, which cloud-init then cannot parse."""
    problems = []
    for number, line in enumerate(text.split("\n"), start=1):
        for column, char in enumerate(line, start=1):
            if unicodedata.category(char) == "Cc" and char not in _LAYOUT:
                key = line.split(":", 1)[0].strip() if ":" in line else ""
                within = f" (in `{key}`)" if key and len(key) < 80 and key.isprintable() else ""
                problems.append(Problem(f"{source}:line {number}, column {column}", f"holds the control character "
                                        f"{unicodedata.name(char, f'U+{ord(char):04X}')} ({char!r}){within}; a stack "
                                        "file is text.", "delete it (a pasted terminal colour code or page break)."))
                if len(problems) == 10:
                    raise SpecError(problems, source)
    if problems:
        raise SpecError(problems, source)


def _parse(text: str, source: str) -> Any:
    """The YAML document, or a SpecError naming the file, the line and the fix."""
    _control_characters(text, source)
    loader = None
    try:
        loader = _Loader(text)
        root = loader.get_single_node()
        if root is None:
            return None
        if _expanded_size(root) > MAX_NODES:
            raise _Refused("the file", f"expands to more than {MAX_NODES:,} values (aliases that repeat aliases, or "
                           "an alias inside itself)", "write the values out instead of nesting aliases.")
        return loader.construct_document(root)
    except _Refused as refused:
        line = f" (line {refused.mark.line + 1})" if refused.mark else ""
        raise SpecError([Problem(refused.where, f"{refused.message}{line}.", refused.fix)], source) from None
    except RecursionError:
        raise SpecError([Problem("the file", "nests too deeply once its aliases are expanded.",
                                 "write the values out instead of nesting aliases.")], source) from None
    except yaml.reader.ReaderError as error:
        raise SpecError([Problem(source, f"holds a character YAML does not allow (#x{error.character:X}, character "
                                 f"{error.position + 1} of the file).", "delete it; a stack file is plain text.")],
                        source) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        reason = getattr(error, "problem", None) or str(error)
        raise SpecError([Problem(f"{source}:{line.strip()}", f"YAML does not parse at{line}: {reason}.",
                                 "fix the indentation or quoting there (a YAML linter shows it).")],
                        source) from None
    finally:
        if loader is not None:
            loader.dispose()


def _lone_surrogate(text: str) -> str | None:
    """A surrogate code point, which an escape between \\uD800 and \\uDFFF (YAML or JSON) makes of half a character:
    no encoding can write it, so it would stop the plan where the value reaches user-data."""
    return next((char for char in text if unicodedata.category(char) == "Cs"), None)


def _plain(value: Any, where: str, source: str) -> None:
    """Only what the engine's config holds (maps with string keys, lists, strings, numbers, booleans, null), and text
    that is text: no lone surrogate in a key or a value."""
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{where}.{key}" if where else str(key)
            _plain(key, path, source)
            _plain(item, path, source)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _plain(item, f"{where}.{index}", source)
    elif isinstance(value, str) and (char := _lone_surrogate(value)) is not None:
        raise SpecError([Problem(ascii(where)[1:-1], f"holds the escape {ascii(char)[1:-1]}, half of a character "
                                 "(a lone surrogate), which no text can hold.", "write the character itself, or "
                                 "both halves of its pair.")], source)
    elif not isinstance(value, str | int | float | bool | type(None)):
        raise SpecError([Problem(where, f"holds a YAML {type(value).__name__} value; stack config holds strings, "
                                 "numbers, true/false, lists and maps.", "quote the value to make it a string.")],
                        source)


def _squashed(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", key.lower())


def region_keys() -> tuple[str, ...]:
    """The config keys a stack sets besides the cluster: each cloud's region key (spec/clouds.py)."""
    return tuple(key for key in REGION_KEYS.values() if key)


def _misspelt(config: dict[str, Any], source: str) -> None:
    """Keys that are gpufleet's or a provider's in all but spelling: Pulumi would pass them to nobody."""
    wanted = {_squashed(key): key for key in (CLUSTER_KEY, *region_keys())}
    problems = [Problem(str(key), f"is not a key gpufleet reads; it looks like `{wanted[_squashed(str(key))]}` (config "
                        "keys are namespace:name, in this case).", f"rename it to {wanted[_squashed(str(key))]}.")
                for key in config if _squashed(str(key)) in wanted and key not in wanted.values()]
    if problems:
        raise SpecError(problems, source)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are each given once: JSON parsers keep the last of a repeated key silently, as YAML
    would, so what a reviewer reads first would not be what deploys."""
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _Refused(CLUSTER_KEY, f"gives `{key}` twice in one object of its JSON; the program would keep "
                           "only the last", "keep one of them.")
        seen[key] = value
    return seen


def cluster_object(value: Any, source: str = "") -> Any:
    """The cluster as the program reads it: a JSON string (a documented form) is the object it holds, a key it repeats
    refused as YAML's are; anything else as it is. `fleet` (the loader) and `pulumi up` (components/program.py) both
    read the cluster through this, so they read the same stack."""
    if not isinstance(value, str):
        return value
    try:
        parsed = json.loads(value, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError:
        return value
    except _Refused as refused:
        raise SpecError([Problem(refused.where, f"{refused.message}.", refused.fix)], source) from None
    return parsed if isinstance(parsed, dict) else value


def load_stack_file(path: Path) -> StackFile:
    """Parse a stack file, turning every way it can be unreadable or malformed into a SpecError that names the file
    (and the line, or the key path, where there is one)."""
    source = str(path)
    data = _read(path)
    if len(data) > MAX_BYTES:
        raise _file_error(source, f"is larger than {MAX_BYTES // 1024} KiB; a stack file is a few kilobytes.",
                          "pass the stack's own file; data the job reads belongs on the nodes or in the bucket.")
    document = _parse(_decode(data, source), source)
    config = document.get("config") if isinstance(document, dict) else None
    if not isinstance(config, dict):
        raise SpecError([Problem("config", "the stack file has no `config:` map.",
                                 f"put the cluster under `config: {{{CLUSTER_KEY}: {{...}}}}`.")], source)
    if CLUSTER_KEY in config:
        config[CLUSTER_KEY] = cluster_object(config[CLUSTER_KEY], source)
    _plain(config, "", source)
    _misspelt(config, source)
    if problems := config_key_problems(config, PROVIDER_KEYS):
        raise SpecError(problems, source)
    name = stack_name_of(path)
    if problem := stack_name_problem(name):
        raise SpecError([Problem("stack", f"{problem}.", "rename the file to Pulumi.<name>.yaml with a name of "
                                 "letters, digits, -, _ and . (at most 100).")], source)
    return StackFile(name=name, path=path, config=config)

