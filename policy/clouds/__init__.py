"""Each cloud's policy reader, one module per cloud with Pulumi resources, found by policy.readers through the cloud
registry."""
