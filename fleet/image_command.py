"""`fleet image build --stack NAME`: bakes the stack's node image on its cloud, through a bake stack `<NAME>-bake`
whose program is components/bake_program.py, run inline by Pulumi's Automation API in a workspace of its own (a
temporary directory: no bake stack file is ever left in stacks/): `up` in phase `instance` (one machine boots the
stack's node software on its base image, records the matrix and powers off), a refresh every POLL_S seconds until the
cloud reports the machine stopped, `up` in phase `image` (the image from it, through the cloud's image service),
then `destroy` (the image is kept). It prints the image and the `image:` value that makes the stack boot from it.

`--boot` bakes the harness's image the same way on this machine instead (fleet.image_boot).

Exit 0 with the image made, 1 when the bake did not finish in time or a Pulumi step failed (the bake stack is left for
`pulumi stack select <NAME>-bake` to inspect), 2 for a bad stack, the local stack or no Pulumi CLI.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Callable

from clouds import CLOUDS
from components import bake_program
from components.bake_program import IMAGE_PHASE, MACHINE_PHASE, image_module
from fleet.cli import add_stack_args
from fleet.stacks import resolve, spec_and_plan
from here.local.errors import EXIT_FAILED, EXIT_USAGE
from plan.bake import BAKE_SUFFIX
from plan.identity import project_name

POLL_S = 30


def register(subparsers) -> None:
    image = subparsers.add_parser("image", help="node images baked from a stack's software matrix")
    actions = image.add_subparsers(dest="action", required=True)
    build = actions.add_parser("build", help="bake the stack's node image on its cloud (a bake stack NAME-bake)")
    add_stack_args(build)
    build.add_argument("--timeout", type=int, default=3600, help="seconds the bake may take (default 3600)")
    build.add_argument("--boot", action="store_true", help="bake a boot-harness image on this machine instead (real "
                       "cloud-init and systemd), for `fleet up --stack NAME --boot`")
    build.set_defaults(run=run)


def stopped(deployment: dict, cloud: str, instance_id: str) -> bool:
    """Whether the cloud reported the bake machine stopped, in `pulumi stack export`'s deployment after a refresh."""
    images = image_module(cloud)
    field, value = images.STATE
    return any(r.get("type") == images.INSTANCE and r.get("id") == instance_id
               and r.get("outputs", {}).get(field) == value for r in deployment.get("resources", []))


def run(args) -> int:
    stack_file = resolve(args.stack, args.stack_file)
    spec = spec_and_plan(stack_file)[0]
    if CLOUDS[spec.cloud].runs_here:
        print(f"fleet: {stack_file.name} runs on this machine's software: there is no image to bake; "
              "bake a cloud's stack (`fleet image build --stack NAME`).", file=sys.stderr)
        return EXIT_USAGE
    if args.boot:
        from fleet.image_boot import bake_here

        return bake_here(stack_file, spec, args.timeout)
    base = "" if spec.image_base == "auto" else f", base: {spec.image_base}"
    # The bake stack's settings live in a workspace of its own, never in stacks/: no file there is ever a bake.
    with tempfile.TemporaryDirectory(prefix="gpufleet-bake-") as workspace:
        try:
            from pulumi import automation as auto

            bake = auto.create_or_select_stack(
                stack_name=f"{stack_file.name}{BAKE_SUFFIX}", project_name=project_name(),
                program=phase_program(MACHINE_PHASE), opts=auto.LocalWorkspaceOptions(work_dir=workspace))
            bake.set_all_config({key: auto.ConfigValue(value=value)
                                 for key, value in stack_file.engine_config().items()})
        except Exception as error:  # no Pulumi CLI, no backend login: said, not traced
            print(f"fleet: image build needs the Pulumi CLI and a backend (`pulumi login`): {error}", file=sys.stderr)
            return EXIT_USAGE
        return _bake(bake, auto, spec.cloud, args.timeout, base)


def phase_program(phase: str) -> Callable[[], None]:
    """The bake's program in one phase, as the Automation API runs it (inline, in this process)."""

    def program() -> None:
        bake_program.bake(phase)

    return program


def _bake(bake, auto, cloud: str, timeout: int, base: str) -> int:
    try:
        machine = bake.up(on_output=print).outputs["bakeInstanceId"].value
        deadline = time.monotonic() + timeout
        while True:
            bake.refresh()
            if stopped(bake.export_stack().deployment, cloud, machine):
                break
            if time.monotonic() > deadline:
                print(f"fleet: the bake machine {machine} did not power off within {timeout} s; its console log "
                      "says why (the bake stack is left as it is).", file=sys.stderr)
                return EXIT_FAILED
            time.sleep(POLL_S)
        outputs = bake.up(on_output=print, program=phase_program(IMAGE_PHASE)).outputs
        bake.destroy(on_output=print)
    except auto.errors.CommandError as error:
        print(f"fleet: a Pulumi step of the bake failed: {error}", file=sys.stderr)
        return EXIT_FAILED
    image = outputs["bakedImage"].value
    print(json.dumps({"image": image, "matrix": outputs["imageMatrix"].value}))
    print(f"fleet: baked {image}; boot the stack from it with `image: {{baked: {image}{base}}}`", file=sys.stderr)
    return 0
