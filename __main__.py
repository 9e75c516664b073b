"""gpufleet's Pulumi program: stack config -> validated spec -> plan -> the cloud's realizer -> outputs. (A bake is
`fleet image build`'s own program, components/bake_program.py, never this one.)"""

from components.program import main

# The plan realized, which the preview (fleet/preview.py) reads from this module's globals instead of planning again.
cluster = main()
