"""The Alibaba Cloud realizer: a ClusterPlan as Alibaba Cloud resources, one small module per concern."""
