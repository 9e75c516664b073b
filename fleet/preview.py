"""Run the real `__main__.py` under Pulumi's mock runtime and record what the engine would receive.

Mocks neither read stack files nor keep resource options, so this loads the stack file itself, hands its config to
the runtime, and records options with its own monitor. A fresh monitor per run keeps runs independent. Deploy-time
look-ups (invokes) are answered with each cloud's stand-ins (`STAND_INS` in components/<cloud>/lookups.py), and
outputs a provider computes that a realizer reads with the values its realizer module declares (`COMPUTED`).
"""

from __future__ import annotations

import asyncio
import logging
import runpy
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pulumi
from google.protobuf import json_format
from pulumi.runtime import mocks as pulumi_mocks

from clouds import CLOUDS
from components.program import InvalidStack
from components.realizers import look_up, lookups_of, realizer_of
from plan.facts import DeployFacts
from plan.model import ClusterPlan
from plan.paths import PROJECT_ROOT
from spec.cluster import ClusterSpec
from spec.errors import SpecError
from spec.stackfile import StackFile

PROJECT = "gpufleet"
# Pulumi's marker for a secret value inside deserialized properties.
_SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
_SIG_KEY = "4dabf18193072939515e22adb298388d"


def _unwrap(value: Any) -> Any:
    """Inputs as the engine shows them: secrets masked, whole numbers as integers, nested structures kept."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        if value.get(_SIG_KEY) == _SECRET_SIG:
            return "[secret]"
        return {key: _unwrap(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_unwrap(item) for item in value]
    return value


def _short(urn: str) -> str | None:
    """A URN's resource name, or None for the stack itself."""
    if not urn or urn.split("::")[-2].split("$")[-1] == "pulumi:pulumi:Stack":
        return None
    return urn.split("::")[-1]


@cache
def stand_ins() -> dict[str, dict | Callable[[dict], dict]]:
    """Every cloud's stand-in answers, by invoke token."""
    answers: dict[str, dict | Callable[[dict], dict]] = {}
    for cloud in CLOUDS:
        if (module := lookups_of(cloud)) is not None:
            answers |= module.STAND_INS
    return answers


@cache
def computed(package: str) -> dict[str, dict]:
    """Outputs a provider computes that the realizer of the package's cloud reads (its module's COMPUTED), by
    resource type, as a first `pulumi up` would set them."""
    cloud = next((name for name, c in CLOUDS.items() if c.pulumi_package == package), None)
    return realizer_of(cloud).COMPUTED if cloud else {}


class _Mocks(pulumi.runtime.Mocks):
    """Every resource echoes its inputs and gains the ids and names a provider would assign; every look-up gets its
    cloud's stand-in answer (an invoke without one is an error, not an empty answer) and is recorded."""

    def __init__(self) -> None:
        self.invokes: list[dict[str, Any]] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        provided = computed(args.typ.split(":", 1)[0]).get(args.typ, {})
        state = {"arn": f"arn:mock:{args.typ}:{args.name}", "name": args.name, **provided, **args.inputs}
        return args.resource_id or f"{args.name}-id", state  # a read (`Resource.get`) keeps the id it asked for

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict:
        if args.token not in stand_ins():
            raise LookupError(f"no stand-in answer for the invoke {args.token}: add it to its cloud's STAND_INS")
        asked = _unwrap(dict(args.args))
        self.invokes.append({"token": args.token, "args": asked})
        answer = stand_ins()[args.token]
        return answer(asked) if callable(answer) else answer


class _RecordingMonitor(pulumi_mocks.MockMonitor):
    """Keeps each registration's type, name, parent, inputs and options, and the program's warnings; `run_program`
    adds the stack's outputs."""

    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        super().__init__(mocks)
        self.records: list[dict[str, Any]] = []
        self.outputs: dict[str, Any] = {}
        self.warnings: list[str] = []

    def RegisterResource(self, request):
        if request.type != "pulumi:pulumi:Stack":
            inputs = pulumi.runtime.rpc.deserialize_properties(request.object, keep_unknowns=True)
            self.records.append({"type": request.type, "name": request.name, "parent": _short(request.parent),
                                 "inputs": _unwrap(inputs), "options": _options(request)})
        return super().RegisterResource(request)


class _Warnings(logging.Handler):
    """The program's `pulumi.log.warn` messages, which `pulumi preview` shows as warnings, kept in a list."""

    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(record.getMessage())


def _options(request) -> dict[str, Any]:
    """The resource options a program set, as plain values (empty ones left out)."""
    options = {
        "custom": request.custom,
        "protect": request.protect,
        "dependsOn": [_short(urn) for urn in request.dependencies],
        "propertyDependencies": {key: [_short(urn) for urn in deps.urns]
                                 for key, deps in sorted(request.propertyDependencies.items()) if deps.urns},
        "provider": request.provider,
        "deleteBeforeReplace": request.deleteBeforeReplace,
        "ignoreChanges": list(request.ignoreChanges),
        "additionalSecretOutputs": list(request.additionalSecretOutputs),
        "replaceOnChanges": list(request.replaceOnChanges),
        "replacementTrigger": (json_format.MessageToDict(request.replacement_trigger)
                               if request.HasField("replacement_trigger") else None),
        "retainOnDelete": request.retainOnDelete,
        "replaceWith": [_short(urn) for urn in request.replace_with],
    }
    return {key: value for key, value in options.items()
            if value not in (None, "", [], {}, False) or key == "custom"}


@dataclass
class Preview:
    """What `pulumi preview` would register for one stack, recorded offline: resources, outputs, the look-ups the
    program made, its warnings, and the plan it built."""

    stack: str
    plan: ClusterPlan | None = None
    resources: list[dict[str, Any]] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    invokes: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _mock_runtime(stack: StackFile) -> _RecordingMonitor:
    """A fresh mock runtime for one stack, with its config; a new root stack, or exports of an earlier run in this
    process would leak into this one."""
    monitor = _RecordingMonitor(_Mocks())
    # A logger of this run's own (not in logging's tree): the warnings go to the run's list, nowhere else.
    logger = logging.Logger(f"{PROJECT}.preview")
    logger.addHandler(_Warnings(monitor.warnings))
    _fresh_event_loop()
    pulumi.runtime.settings.set_root_resource(None)
    pulumi.runtime.set_mocks(monitor.mocks, project=PROJECT, stack=stack.name, preview=False, logger=logger,
                             monitor=monitor)
    pulumi.runtime.set_all_config(stack.engine_config())
    return monitor


def _fresh_event_loop() -> None:
    """`pulumi.runtime.test` runs the program on the current event loop. A loop made before fork() (a test runner's
    worker, mutmut's) shares its epoll instance with the parent and never wakes, so a run in a forked child hangs:
    each run gets its own loop."""
    previous = asyncio.get_event_loop_policy().get_event_loop()
    asyncio.set_event_loop(asyncio.new_event_loop())
    if not previous.is_running():
        previous.close()


def stand_in_facts(stack: StackFile, spec: ClusterSpec) -> tuple[ClusterSpec, DeployFacts]:
    """The spec on its chosen candidate and the deploy-time facts it needs, as the program would look them up,
    answered by the stand-ins."""
    _mock_runtime(stack)
    return look_up(spec, stack.name, PROJECT)


def run_program(stack: StackFile, project_dir: Path = PROJECT_ROOT,
                program: Callable[[], ClusterPlan] | None = None) -> Preview:
    """Run `__main__.py` (or `program`, an inline one such as the bake's, returning its plan) for a stack under mocks;
    a bad stack raises SpecError, exactly as the program found it."""
    monitor = _mock_runtime(stack)
    main = project_dir / "__main__.py"
    preview = Preview(stack=stack.name, resources=monitor.records, outputs=monitor.outputs, warnings=monitor.warnings)

    @pulumi.runtime.test
    def run() -> pulumi.Output:
        preview.plan = program() if program else runpy.run_path(str(main), run_name="__main__")["cluster"]
        preview.invokes = list(monitor.mocks.invokes)
        # Mocks register the stack's outputs before the program runs: read the exports off the root stack instead.
        exports = pulumi.Output.from_input(pulumi.runtime.get_root_resource().outputs)
        return exports.apply(lambda values: monitor.outputs.update(_unwrap(values)))

    try:
        run()
    except InvalidStack as error:
        raise SpecError(error.spec_error.problems, str(stack.path)) from None
    return preview
