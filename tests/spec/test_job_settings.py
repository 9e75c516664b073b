"""The stack's `job` model is the job's own settings: generated from TrainConfig's fields, it takes exactly what the
job takes (each allowed value, each bound, finite numbers), and `fleet schema` names every setting with its type,
values and doc, without the settings every node sets itself."""

from __future__ import annotations

import json
import math

import pytest
from pydantic import ValidationError
from pydantic.alias_generators import to_camel

from fleet.schema_command import schema_text
from spec.jobs import PLATFORM_OWNED, JobSettings
from training.config import ConfigError, TrainConfig, settings

STACK_SETTINGS = [s for s in settings() if s.name not in PLATFORM_OWNED]
NEAR = 1e-9
"""How far past a bound a value is tried (floats); whole numbers step by 1."""


def _edges(setting) -> list:
    """Each bound's value and the values just inside and outside it."""
    step = NEAR if setting.kind is float else 1
    return [limit + delta for limit in setting.bounds.values() for delta in (-step, 0, step)]


def _values(setting) -> list:
    if setting.choices:
        return [*setting.choices, "none-of-these", setting.choices[0].upper()]
    if setting.kind is float:
        return [*_edges(setting), math.inf, -math.inf, math.nan]
    return _edges(setting)


def _job_takes(name: str, value) -> bool:
    try:
        JobSettings.model_validate({name: value})
    except ValidationError:
        return False
    return True


def _train_config_takes(name: str, value) -> bool:
    try:
        TrainConfig(**{name: value})
    except ConfigError:
        return False
    return True


CASES = [(s.name, value) for s in STACK_SETTINGS for value in _values(s)]


@pytest.mark.parametrize(("name", "value"), CASES, ids=[f"{n}={v!r}" for n, v in CASES])
def test_the_stack_takes_a_value_exactly_when_the_job_does(name, value):
    assert _job_takes(name, value) == _train_config_takes(name, value)


def test_every_bound_and_choice_is_tried_on_both_sides():
    """The cases above reach both answers for every bounded or enumerated setting, so an agreement is not vacuous."""
    for setting in STACK_SETTINGS:
        if setting.bounds or setting.choices or setting.kind is float:
            answers = {_train_config_takes(setting.name, value) for value in _values(setting)}
            assert answers == {True, False}, setting.name


def test_the_schema_names_each_setting_with_its_type_values_and_doc():
    schema = json.loads(schema_text())
    assert schema["properties"]["job"]["$ref"] == "#/$defs/JobSettings"
    job = schema["$defs"]["JobSettings"]
    assert job["additionalProperties"] is False
    assert "required" not in job
    types = {int: "integer", float: "number", str: "string", bool: "boolean"}
    assert set(job["properties"]) == {to_camel(s.name) for s in STACK_SETTINGS}
    for setting in STACK_SETTINGS:
        field = job["properties"][to_camel(setting.name)]
        assert field["type"] == types[setting.kind], setting.name
        assert field["description"] == setting.doc and field["default"] == setting.default
        assert field.get("enum", []) == list(setting.choices), setting.name


@pytest.mark.parametrize("name", sorted(PLATFORM_OWNED))
def test_settings_the_platform_owns_are_not_in_the_schema(name):
    assert not _job_takes(name, TrainConfig.__dataclass_fields__[name].default)
