"""Pulumi type tokens the rules read, as the installed SDKs declare them (pulumi_aws 7, pulumi_alicloud 4,
tencentcloud_iac_pulumi 0.2)."""

AWS_LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
AWS_INSTANCE = "aws:ec2/instance:Instance"
AWS_EBS_VOLUME = "aws:ebs/volume:Volume"
AWS_ASG = "aws:autoscaling/group:Group"
AWS_PLACEMENT_GROUP = "aws:ec2/placementGroup:PlacementGroup"
AWS_SG = "aws:ec2/securityGroup:SecurityGroup"
AWS_SG_INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
AWS_SG_EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
AWS_SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
AWS_BUCKETS = ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")
AWS_BUCKET_SSE = "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
AWS_ROLE = "aws:iam/role:Role"
AWS_ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
AWS_POLICY = "aws:iam/policy:Policy"

ALI_INSTANCE = "alicloud:ecs/instance:Instance"
ALI_LAUNCH_TEMPLATE = "alicloud:ecs/ecsLaunchTemplate:EcsLaunchTemplate"
ALI_NIC = "alicloud:ecs/ecsNetworkInterface:EcsNetworkInterface"
ALI_SCALING_CONFIG = "alicloud:ess/scalingConfiguration:ScalingConfiguration"
ALI_SCALING_GROUP = "alicloud:ess/scalingGroup:ScalingGroup"
ALI_DEPLOYMENT_SET = "alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet"
ALI_SG = "alicloud:ecs/securityGroup:SecurityGroup"
ALI_SG_RULE = "alicloud:ecs/securityGroupRule:SecurityGroupRule"
ALI_BUCKET = "alicloud:oss/bucket:Bucket"
ALI_BUCKET_SSE = "alicloud:oss/bucketServerSideEncryption:BucketServerSideEncryption"
ALI_RAM_POLICY = "alicloud:ram/policy:Policy"

TC_INSTANCE = "tencentcloud:Instance/instance:Instance"
TC_SCALING_CONFIG = "tencentcloud:As/scalingConfig:ScalingConfig"
TC_SCALING_GROUP = "tencentcloud:As/scalingGroup:ScalingGroup"
TC_HPC_CLUSTER = "tencentcloud:Cvm/hpcCluster:HpcCluster"
TC_SG_RULES = "tencentcloud:Security/groupRuleSet:GroupRuleSet"
TC_BUCKET = "tencentcloud:Cos/bucket:Bucket"
TC_CAM_POLICY = "tencentcloud:Cam/policy:Policy"

BUCKETS = (*AWS_BUCKETS, ALI_BUCKET, TC_BUCKET)
