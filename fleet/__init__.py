"""`fleet`: the gpufleet command line (offline preview, local cluster, cost)."""
