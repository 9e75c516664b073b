"""The code bundle's upload on Alibaba Cloud: no mainland stack writes it through OSS's default public endpoint,
which refuses data calls from accounts that activated OSS on or after 2025-03-20
(docs/cloud-facts.md#alibaba-oss-public-endpoint). Checked on the resources the real program registers."""

from __future__ import annotations

import json

import pytest
import yaml
from spec_cases import only, write

from fleet.preview import run_program
from plan import catalog
from spec.stackfile import load_stack_file

OBJECT = "alicloud:oss/bucketObject:BucketObject"
CNAME = "alicloud:oss/bucketCname:BucketCname"
PROVIDER = "pulumi:providers:alicloud"
# The regions OSS's region table lists under "Asia Pacific - Chinese mainland" (China (...), Hong Kong apart).
MAINLAND = ("cn-hangzhou", "cn-shanghai", "cn-nanjing", "cn-fuzhou", "cn-qingdao", "cn-beijing", "cn-zhangjiakou",
            "cn-huhehaote", "cn-wulanchabu", "cn-shenzhen", "cn-heyuan", "cn-guangzhou", "cn-chengdu",
            "cn-zhongwei")


def zone_of(region: str) -> str:
    """A zone the catalog knows there, else the region's zone `a` by its naming rule."""
    known = catalog.regions("alicloud")[region]
    return known[0] if known else next(zone for zone in (f"{region}-a", f"{region}a")
                                       if catalog.zone_in_region("alicloud", region, zone))


def preview_in(tmp_path, region: str, storage: dict | None = None):
    changes = {"zone": zone_of(region), **({"storage": storage} if storage else {})}
    return run_program(load_stack_file(write(tmp_path, "alicloud", changes, region=region)))


def upload_endpoint(resources) -> str | None:
    """The OSS endpoint the bundle's object is written through: its provider's, or None for the default provider
    (whose OSS endpoint is oss-<region>.aliyuncs.com, the public one: terraform-provider-alicloud endpoint.go)."""
    (bundle,) = [r for r in resources if r["type"] == OBJECT]
    reference = bundle["options"].get("provider")
    if reference is None:
        return None
    (provider,) = [r for r in resources if r["type"] == PROVIDER and r["name"] == reference.split("::")[-2]]
    (endpoints,) = json.loads(provider["inputs"]["endpoints"])
    return endpoints["oss"]


def test_the_mainland_list_names_catalog_regions():
    assert set(MAINLAND) <= set(catalog.regions("alicloud")) and "cn-hongkong" in catalog.regions("alicloud")


@pytest.mark.parametrize("region", sorted(catalog.regions("alicloud")))
def test_no_mainland_stack_writes_the_bundle_through_the_public_endpoint(tmp_path, region):
    endpoint = upload_endpoint(preview_in(tmp_path, region).resources)
    if region in MAINLAND:
        assert endpoint not in (None, f"oss-{region}.aliyuncs.com", f"{region}.oss.aliyuncs.com")
    else:
        assert endpoint is None  # the default endpoint takes data calls outside the mainland


def test_a_mainland_five_line_stack_writes_through_the_internal_endpoint_and_says_so(tmp_path):
    preview = preview_in(tmp_path, "cn-hangzhou")
    assert upload_endpoint(preview.resources) == "oss-cn-hangzhou-internal.aliyuncs.com"
    assert not [r for r in preview.resources if r["type"] == CNAME]
    (warning,) = [w for w in preview.warnings if "bundle" in w]
    assert "oss-cn-hangzhou-internal.aliyuncs.com" in warning and "storage.bundleDomain" in warning


def test_a_bundle_domain_is_bound_and_the_bundle_written_through_it(tmp_path):
    preview = preview_in(tmp_path, "cn-hangzhou", {"bundleDomain": "code.example.com"})
    bucket = preview.plan.storage.bucket
    assert upload_endpoint(preview.resources) == "code.example.com"
    (binding,) = [r for r in preview.resources if r["type"] == CNAME]
    # The provider's OSS client addresses <bucket>.<endpoint>: that name is the one bound to the bucket.
    assert binding["inputs"]["domain"] == f"{bucket}.code.example.com"
    assert binding["options"]["ignoreChanges"] == ["certificate"]
    (bundle,) = [r for r in preview.resources if r["type"] == OBJECT]
    assert binding["name"] in bundle["options"]["dependsOn"]
    (warning,) = [w for w in preview.warnings if "bundle" in w]
    assert f"{bucket}.code.example.com" in warning and "ICP" in warning


def test_the_bucket_itself_stays_on_the_default_provider(tmp_path):
    resources = preview_in(tmp_path, "cn-wulanchabu").resources
    bucket_settings = [r for r in resources if r["type"].startswith("alicloud:oss/") and r["type"] != OBJECT]
    assert bucket_settings and not [r["name"] for r in bucket_settings if r["options"].get("provider")]


@pytest.mark.parametrize("cloud", ["aws", "tencentcloud", "local"])
def test_other_clouds_refuse_a_bundle_domain(tmp_path, cloud):
    problem = only(tmp_path, cloud, {"storage": {"bundleDomain": "code.example.com"}})
    assert problem.path == "gpufleet:cluster.storage.bundleDomain" and "needs no domain" in problem.message
    assert problem.message.endswith("needs no domain for the code bundle: its default endpoint takes the upload from "
                                    "anywhere.") and problem.fix == "remove storage.bundleDomain."


def test_the_upload_provider_keeps_the_stacks_credentials(tmp_path):
    """An explicit provider inherits nothing from the stack's `alicloud:` config: the realizer hands it over."""
    path = write(tmp_path, "alicloud")
    document = yaml.safe_load(path.read_text())
    document["config"] |= {"alicloud:profile": "ops", "alicloud:accessKey": {"secure": "v1:LTAI-example"},
                           "alicloud:assumeRole": {"roleArn": "acs:ram::123:role/deploy"}}
    path.write_text(yaml.safe_dump(document))
    resources = run_program(load_stack_file(path)).resources
    (provider,) = [r["inputs"] for r in resources if r["type"] == PROVIDER]
    assert provider["profile"] == "ops" and provider["accessKey"] == "[secret]"
    assert json.loads(provider["assumeRole"]) == {"roleArn": "acs:ram::123:role/deploy"}
    assert "secretKey" not in provider


def test_a_mainland_stack_runs_its_pipeline_in_the_region_by_default(tmp_path):
    """Every account reaches the internal endpoint from inside the region: the default, whatever the account's age
    (docs/cloud-facts.md#alibaba-oss-public-endpoint). The plan names the place and the endpoint marks are read at."""
    pipeline = preview_in(tmp_path, "cn-wulanchabu").plan.pipeline
    assert pipeline.runs_in == "cn-wulanchabu"
    assert pipeline.runner == ("self-hosted", "gpufleet-cn-wulanchabu")
    assert pipeline.store.endpoint == "https://s3.oss-cn-wulanchabu-internal.aliyuncs.com"
    assert "gpufleet-cn-wulanchabu" in pipeline.needs and "storage.endpoint: public" in pipeline.needs


def test_an_account_that_activated_oss_before_the_switch_keeps_the_public_endpoint(tmp_path):
    """storage.endpoint: public: the upload goes through the default provider (OSS's public endpoint), marks are read
    at the public S3 endpoint and the pipeline runs on GitHub's runners."""
    preview = preview_in(tmp_path, "cn-hangzhou", {"endpoint": "public"})
    assert upload_endpoint(preview.resources) is None
    assert not [w for w in preview.warnings if "bundle" in w]
    pipeline = preview.plan.pipeline
    assert (pipeline.runs_in, pipeline.runner, pipeline.needs) == ("", ("ubuntu-latest",), "")
    assert pipeline.store.endpoint == "https://s3.oss-cn-hangzhou.aliyuncs.com"


def test_a_bundle_domain_still_leaves_the_marks_to_the_chosen_endpoint(tmp_path):
    """The bound domain carries the upload; `fleet heal` and `fleet roll` read marks through the endpoint the stack
    chose (the S3 API through a custom domain is not documented: docs/cloud-facts.md#alibaba-oss-public-endpoint)."""
    plan = preview_in(tmp_path, "cn-hangzhou", {"bundleDomain": "code.example.com"}).plan
    assert plan.pipeline.runs_in == "cn-hangzhou"
    plan = preview_in(tmp_path, "cn-hangzhou", {"bundleDomain": "code.example.com", "endpoint": "public"}).plan
    assert plan.storage.code_upload.endpoint == "code.example.com" and plan.pipeline.runs_in == ""


def test_outside_the_mainland_the_pipeline_runs_anywhere_and_the_choice_is_refused(tmp_path):
    pipeline = preview_in(tmp_path, "ap-southeast-1").plan.pipeline
    assert (pipeline.runs_in, pipeline.store.endpoint) == ("", "https://s3.oss-ap-southeast-1.aliyuncs.com")
    problem = only(tmp_path, "alicloud", {"zone": zone_of("ap-southeast-1"), "storage": {"endpoint": "internal"}},
                   region="ap-southeast-1")
    assert problem.path == "gpufleet:cluster.storage.endpoint" and problem.fix == "remove storage.endpoint."
    assert "needs no choice of the store's endpoint" in problem.message


@pytest.mark.parametrize("cloud", ["aws", "tencentcloud", "local"])
def test_other_clouds_refuse_a_store_endpoint(tmp_path, cloud):
    problem = only(tmp_path, cloud, {"storage": {"endpoint": "public"}})
    assert problem.path == "gpufleet:cluster.storage.endpoint"
    assert problem.message.endswith("its public endpoint takes every account's data calls from anywhere.")
