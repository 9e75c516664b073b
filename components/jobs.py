"""The stack's `job` settings as the node will receive them: one spelling per setting, each value of its setting's
type, and none of the settings the platform sets itself.

TrainConfig (training.config) decides what a setting is called and what it takes; this module only asks it.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping

from pydantic.alias_generators import to_camel

from components.errors import Problem
from components.stackfile import CLUSTER_KEY
from training.config import ConfigError, TrainConfig, setting_name

# Settings every node sets on the job's command line itself, and why a stack may not.
PLATFORM_OWNED = {
    "checkpoint_dir": "every node writes checkpoints to its own directory, which the spot watcher and the bucket sync "
                      "push; another one would leave them pushing an empty directory and lose the checkpoints",
    "run_dir": "the node keeps the job's metrics beside its checkpoints, so that they reach the bucket with them",
    "resume": "nodes that join, or restart after a spot notice, resume from the newest checkpoint; without it every "
              "restart would train from step 0 again",
}


def _types() -> dict[str, type]:
    return typing.get_type_hints(TrainConfig)


def refused_settings(job: Mapping[str, typing.Any]) -> tuple[dict[str, typing.Any], list[Problem]]:
    """The settings that may reach the node, and a problem for each that may not: one the platform owns, a second
    spelling of a setting already given, a map or list where one value belongs, or a flag where a number belongs."""
    types = _types()
    kept: dict[str, typing.Any] = {}
    problems: list[Problem] = []
    first: dict[str, str] = {}
    for key, value in job.items():
        name = setting_name(str(key))
        path = f"{CLUSTER_KEY}.job.{key}"
        kind = types.get(name)
        if name in PLATFORM_OWNED:
            problems.append(Problem(path, f"is set by gpufleet on every node: {PLATFORM_OWNED[name]}.",
                                    "remove it."))
        elif name in first:
            problems.append(Problem(path, f"`{first[name]}` and `{key}` are the same setting ({to_camel(name)}); the "
                                    "node would get only one of them.", f"keep one: `{to_camel(name)}`."))
        elif kind is not None and isinstance(value, dict | list):
            problems.append(Problem(path, f"is a {'map' if isinstance(value, dict) else 'list'}; the setting takes "
                                    f"one {kind.__name__}.", "write a single value."))
        elif kind in (int, float) and isinstance(value, bool):
            problems.append(Problem(path, f"got {str(value).lower()}, where a number belongs (YAML reads yes, no, on "
                                    "and off as true and false).", "write a number."))
        else:
            kept[key] = value
        first.setdefault(name, str(key))
    return kept, problems


def node_settings(job: dict[str, typing.Any]) -> dict[str, typing.Any]:
    """The settings in one spelling (camelCase) with the values TrainConfig parsed them to (`steps: 40.0` is 40), as
    the node's command line gets them; unchanged when TrainConfig refuses them, for the job rule to report why."""
    try:
        config = TrainConfig.from_overrides(job)
    except ConfigError:
        return job
    return {to_camel(setting_name(str(key))): getattr(config, setting_name(str(key))) for key in job}
