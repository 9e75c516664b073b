"""gpufleet's Pulumi program: stack config -> validated spec -> plan -> the cloud's realizer -> outputs; a bake
stack (`gpufleet:bake`, which `fleet image build` sets) runs the bake's program instead (components/bake_program.py)."""

import pulumi

from components.bake_program import bake
from components.program import main

# The plan realized, which the preview (fleet/preview.py) reads from this module's globals instead of planning again.
cluster = bake(phase) if (phase := pulumi.Config("gpufleet").get("bake")) else main()
