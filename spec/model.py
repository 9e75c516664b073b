"""The base of every model of the `gpufleet:cluster` object (spec/cluster.py, the job's settings in
spec/jobs.py): frozen, unknown keys refused, camelCase keys, a flag never read as a number, no control
character (a line break included) and no credential in a URL in any text."""

from __future__ import annotations

import types
import unicodedata
from collections.abc import Iterator
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from spec.redaction import holds_credential, redacted


def _leaf_types(annotation: Any) -> list[Any]:
    """The plain types a field accepts, through unions and Annotated."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _leaf_types(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return [leaf for arg in get_args(annotation) for leaf in _leaf_types(arg)]
    return [annotation]


def _texts(value: Any) -> Iterator[str]:
    """Every string in a value: itself, or the keys and items of a map or list."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _texts(key)
            yield from _texts(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _texts(item)


def _control(text: str) -> str | None:
    return next((char for char in text if unicodedata.category(char) == "Cc"), None)


class SpecModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_flag_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        """pydantic would read true as 1; in a stack file it is a slip (YAML reads yes, no, on, off as flags too)."""
        if isinstance(value, bool):
            leaves = _leaf_types(cls.model_fields[info.field_name].annotation)
            if bool not in leaves and (int in leaves or float in leaves):
                raise PydanticCustomError(
                    "flag_for_number",
                    "got {value}, where a number belongs (YAML reads yes, no, on and off as true and false)",
                    {"value": str(value).lower()},
                )
        return value

    @field_validator("*", mode="before")
    @classmethod
    def _no_control_character(cls, value: Any) -> Any:
        """Every string reaches a node's user-data, node.env or a command line, where a line break or an escape
        ends or corrupts the line; YAML's `|` adds a line break at the end without showing it."""
        for text in _texts(value):
            if (char := _control(text)) is not None:
                kind = "a line break" if char in "\n\r" else f"the control character {char!r}"
                raise PydanticCustomError("control_character", "{text} holds {kind}; the value is one line of text",
                                          {"text": repr(text[:60]), "kind": kind})
        return value

    @field_validator("*", mode="before")
    @classmethod
    def _no_credential(cls, value: Any, info: ValidationInfo) -> Any:
        """A stack file is committed and every value reaches user-data, tags, outputs or logs: a URL's user and
        password in any of them is published. The message shows the value with the password written xxxxx; a map
        that is a model of its own is left to that model, which names the field."""
        leaves = _leaf_types(cls.model_fields[info.field_name].annotation)
        if isinstance(value, dict) and any(isinstance(leaf, type) and issubclass(leaf, BaseModel) for leaf in leaves):
            return value
        for text in _texts(value):
            if holds_credential(text):
                raise PydanticCustomError("credential", "{text} holds a user and password in a URL, which a committed "
                                          "stack file, the nodes' user-data and every log would show",
                                          {"text": repr(redacted(text[:120]))})
        return value
