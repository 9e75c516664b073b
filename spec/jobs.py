"""The stack's `job` object, typed from the job's own settings: `JobSettings` is generated from TrainConfig's fields
(training.config.settings(): name, type, default, allowed values, bounds, doc), so the schema names every setting
the job has with its type and values, and the spec and the job cannot disagree on one. The settings the platform sets
on every node itself are left out: the spec refuses them as unknown keys, with the reason (`platform_owned`).

A setting may be written camelCase (the schema's spelling), snake_case or kebab-case: `one_spelling` puts each under
its schema key before the model reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_origin

from pydantic import ConfigDict, Field, ValidationInfo, create_model, field_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from spec.errors import Problem
from spec.model import SpecModel
from spec.stackfile import CLUSTER_KEY
from training.config import Setting, flag, setting_name, settings

# Settings every node sets on the job's command line itself, and why a stack may not.
PLATFORM_OWNED = {
    "checkpoint_dir": "every node writes checkpoints to its own directory, which the spot watcher and the bucket sync "
                      "push; another one would leave them pushing an empty directory and lose the checkpoints",
    "run_dir": "the node keeps the job's metrics beside its checkpoints, so that they reach the bucket with them",
    "resume": "nodes that join, or restart after a spot notice, resume from the newest checkpoint; without it every "
              "restart would train from step 0 again",
}


class _OneValueEach(SpecModel):
    """Every job setting takes one value, as its command-line flag does."""

    model_config = ConfigDict(coerce_numbers_to_str=True)  # a path or name written as a number, as the job reads it

    @field_validator("*", mode="before")
    @classmethod
    def _one_value(cls, value: Any, info: ValidationInfo) -> Any:
        """A map or a list is named as such, and so is a flag where a word belongs (pydantic would only say the type
        is wrong)."""
        if isinstance(value, dict | list):
            raise PydanticCustomError("one_value", "is a {shape}; the setting takes one value",
                                      {"shape": "map" if isinstance(value, dict) else "list"})
        kind = cls.model_fields[info.field_name].annotation
        if isinstance(value, bool) and (kind is str or get_origin(kind) is Literal):
            raise PydanticCustomError(
                "flag_for_word", "got {value}, where a word belongs (YAML reads yes, no, on and off as true and false)",
                {"value": str(value).lower()})
        return value


def _field(setting: Setting) -> tuple[Any, Any]:
    """The pydantic field of one of the job's settings: its allowed values as a Literal, its bounds, finite floats."""
    kind = Literal[setting.choices] if setting.choices else setting.kind
    finite = {"allow_inf_nan": False} if setting.kind is float else {}
    return kind, Field(setting.default, description=setting.doc, **setting.bounds, **finite)


JobSettings = create_model(
    "JobSettings",
    __base__=_OneValueEach,
    __doc__="The training job's settings (`python -m training.train --help`); one left out keeps the job's default.",
    **{setting.name: _field(setting) for setting in settings() if setting.name not in PLATFORM_OWNED},
)


def one_spelling(job: Mapping[Any, Any]) -> tuple[dict[str, Any], dict[str, str], list[Problem]]:
    """The settings under their schema keys (`seq-len`, `seq_len` and `seqLen` are one setting: `seqLen`), the key
    the stack wrote for each schema key, and a problem for each second spelling of a setting already given."""
    kept: dict[str, Any] = {}
    written: dict[str, str] = {}
    problems: list[Problem] = []
    for key, value in job.items():
        schema_key = to_camel(setting_name(str(key)))
        if schema_key in written:
            problems.append(Problem(f"{CLUSTER_KEY}.job.{key}", f"`{written[schema_key]}` and `{key}` are the same "
                                    f"setting ({schema_key}); the node would get only one of them.",
                                    f"keep one: `{schema_key}`."))
        else:
            kept[schema_key], written[schema_key] = value, str(key)
    return kept, written, problems


def platform_owned(key: str) -> str | None:
    """Why every node sets the setting ``key`` names itself, where it does (None otherwise)."""
    return PLATFORM_OWNED.get(setting_name(key))


def job_args(settings: Mapping[str, Any]) -> tuple[str, ...]:
    """Settings of the training job (by field name) as its command-line flags, in name order."""
    return tuple(f"{flag(name)}={value}" for name, value in sorted(settings.items()))
