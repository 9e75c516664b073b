"""gpufleet's policies: plain functions over resources as the engine sees them, shared by CrossGuard and `fleet plan`."""
