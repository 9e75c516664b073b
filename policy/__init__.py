"""gpufleet's policies: plain functions over resources as the engine sees them, for CrossGuard and `fleet plan`."""
