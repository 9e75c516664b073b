"""gpufleet's cluster model: stack file -> validated spec -> pure plan -> one realizer per cloud."""
