"""Alibaba Cloud's OpenAPI for the node scripts (cloud-init/clouds/alicloud.sh): one RPC call through the official
SDK's generic client, signed with the RAM role's STS key the adapter read from metadata (in the environment), the
response body printed as JSON. No vendor CLI is on the image; this SDK is pinned in the node's tools venv.

    usage: python3 gpufleet-cloud-api ecs|ess ACTION [Name=value ...]
"""

from __future__ import annotations

import json
import os
import sys
from urllib.parse import urlsplit

from alibabacloud_tea_openapi import models
from alibabacloud_tea_openapi.client import Client
from alibabacloud_tea_util.models import RuntimeOptions

# API versions and VPC endpoints (docs/cloud-facts.md#alibaba-node-api). GF_API_ENDPOINT (a URL) replaces the
# endpoint where a test stands in for the API.
VERSIONS = {"ecs": "2014-05-26", "ess": "2014-08-28"}


def call(product: str, action: str, query: dict[str, str], region: str, endpoint_url: str = "") -> dict:
    url = urlsplit(endpoint_url or f"https://{product}-vpc.{region}.aliyuncs.com")
    config = models.Config(access_key_id=os.environ["ALIBABA_CLOUD_ACCESS_KEY_ID"],
                           access_key_secret=os.environ["ALIBABA_CLOUD_ACCESS_KEY_SECRET"],
                           security_token=os.environ["ALIBABA_CLOUD_SECURITY_TOKEN"], region_id=region,
                           endpoint=url.netloc)
    params = models.Params(action=action, version=VERSIONS[product], protocol=url.scheme.upper(), method="POST",
                           auth_type="AK", style="RPC", pathname="/", req_body_type="json", body_type="json")
    return Client(config).call_api(params, models.OpenApiRequest(query=query), RuntimeOptions())["body"]


def main(argv: list[str]) -> int:
    product, action, *pairs = argv
    query = dict(pair.split("=", 1) for pair in pairs)
    try:
        body = call(product, action, query, os.environ["GF_REGION"], os.environ.get("GF_API_ENDPOINT", ""))
    except Exception as error:  # the SDK's errors carry the API's code and message: the node's log shows them
        print(f"gpufleet-cloud-api: {product} {action}: {error}", file=sys.stderr)
        return 1
    print(json.dumps(body))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
