"""The AWS realizer: a ClusterPlan as AWS resources, one small module per concern."""
