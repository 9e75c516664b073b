"""The local target: no cloud resources under Pulumi (`fleet up` brings the cluster up), its outputs, and its
capacity look-up."""
