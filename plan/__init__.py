"""The pure, cloud-neutral plan of a cluster (docs/design.md): what to build, decided before any resource exists."""
