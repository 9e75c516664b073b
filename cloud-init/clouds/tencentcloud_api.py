"""Tencent Cloud's API 3.0 for the node scripts (cloud-init/clouds/tencentcloud.sh): one call through the official
SDK's common client, signed (TC3-HMAC-SHA256) with the CAM role's temporary key the adapter read from metadata (in the
environment), the response printed as JSON. No vendor CLI is on the image; this SDK is pinned in the node's tools venv.

    usage: python3 gpufleet-cloud-api cvm|as ACTION 'JSON-PARAMETERS'
"""

from __future__ import annotations

import json
import os
import sys
from urllib.parse import urlsplit

from tencentcloud.common.common_client import CommonClient
from tencentcloud.common.credential import Credential
from tencentcloud.common.profile.client_profile import ClientProfile
from tencentcloud.common.profile.http_profile import HttpProfile

# API versions; the endpoint is the SDK's (<service>.tencentcloudapi.com, docs/cloud-facts.md#tencent-node-api).
# GF_API_ENDPOINT (a URL) replaces it where a test stands in for the API.
VERSIONS = {"cvm": "2017-03-12", "as": "2018-04-19"}


def call(service: str, action: str, params: dict, region: str, endpoint_url: str = "") -> dict:
    credential = Credential(os.environ["TENCENTCLOUD_SECRET_ID"], os.environ["TENCENTCLOUD_SECRET_KEY"],
                            os.environ["TENCENTCLOUD_SESSION_TOKEN"])
    profile = None
    if endpoint_url:
        url = urlsplit(endpoint_url)
        profile = ClientProfile(httpProfile=HttpProfile(protocol=url.scheme, endpoint=url.netloc))
    client = CommonClient(service, VERSIONS[service], credential, region, profile=profile)
    return client.call_json(action, params)["Response"]


def main(argv: list[str]) -> int:
    service, action, params = argv
    try:
        body = call(service, action, json.loads(params), os.environ["GF_REGION"], os.environ.get("GF_API_ENDPOINT", ""))
    except Exception as error:  # the SDK's errors carry the API's code and message: the node's log shows them
        print(f"gpufleet-cloud-api: {service} {action}: {error}", file=sys.stderr)
        return 1
    print(json.dumps(body))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
