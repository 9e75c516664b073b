"""gpufleet's Pulumi program: stack config -> validated spec -> plan -> the cloud's realizer -> outputs."""

from components.program import main

main()
