"""The pure, cloud-neutral plan of a cluster (DESIGN.md): what to build, decided before any resource exists."""
