"""Offline validation of a preview's AWS resources by terraform-provider-aws itself (the code pulumi-aws bridges)."""
