"""The Tencent Cloud realizer: a ClusterPlan as Tencent Cloud resources, one small module per concern."""
