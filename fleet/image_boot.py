"""`fleet image build --stack NAME --boot`: the stack's node image baked in the boot harness (here.boot.bake), for
`fleet up --stack NAME --boot` to boot from once the stack names it. Prints the image and its matrix as JSON and, on
stderr, the `image:` value that makes the stack boot from it."""

from __future__ import annotations

import json
import sys

from rich.console import Console

from clouds.plans import bake_for
from fleet.stacks import facts_for
from here.boot import host
from here.boot.bake import build
from here.local.errors import EXIT_FAILED, EXIT_USAGE
from spec.cluster import ClusterSpec
from spec.stackfile import StackFile


def bake_here(stack: StackFile, spec: ClusterSpec, timeout: float) -> int:
    reason = host.why_not_here()
    if reason is not None:
        print(f"fleet: --boot cannot boot machines here: {reason}.", file=sys.stderr)
        return EXIT_USAGE
    spec, facts = facts_for(stack, spec)
    bake = bake_for(spec, stack.name, facts, booted=True)
    console = Console(stderr=True)
    try:
        image = build(bake, timeout=timeout, note=lambda text: console.print(f"[bold]•[/] {text}"))
    except RuntimeError as error:  # BakeError, or a harness service that did not start
        print(f"fleet: the bake did not finish: {error}", file=sys.stderr)
        return EXIT_FAILED
    print(json.dumps({"image": image, "matrix": dict(bake.matrix)}))
    base = "" if spec.image_base == "auto" else f", base: {spec.image_base}"
    print(f"fleet: baked {image}; boot the stack from it with `image: {{baked: {image}{base}}}` and "
          f"`fleet up --stack {stack.name} --boot`", file=sys.stderr)
    return 0
