"""User-data as the rule reads it: its size counted in base64 against the cloud's limit whatever form the field
holds, gzip unpacked before the secret search, and values it cannot judge (unknown, redacted, not text) left alone;
a resource of a cloud no reader knows is refused, and only custom resources are judged."""

from __future__ import annotations

import base64
import gzip

from policy.clouds import alicloud as ali_t
from policy.clouds import aws as aws_t
from policy.readers import reader_for
from policy.rules import evaluate

LIMIT = reader_for(aws_t.INSTANCE).user_data_limit
SECRET = "#cloud-config\npassword: hunter22\n"
FOUND = "contains what looks like a password; fetch it at boot from a secret store instead."


def messages(kind: str, inputs: dict, rule: str, custom: bool | None = True) -> list[str]:
    resource = {"type": kind, "name": "r", "parent": None, "inputs": inputs}
    if custom is not None:
        resource["options"] = {"custom": custom}
    return [f["message"] for f in evaluate([resource]) if f["policy"] == rule]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_the_size_is_counted_in_base64_whatever_the_field_holds():
    assert LIMIT is not None
    fits = "x" * (LIMIT // 4 * 3)  # exactly LIMIT bytes once encoded
    over = fits + "xxx"
    assert messages(aws_t.INSTANCE, {"userData": fits}, "user-data-safe") == []
    assert messages(aws_t.INSTANCE, {"userData": over}, "user-data-safe") == [
        f"userData is {LIMIT + 4} bytes in base64, over the {LIMIT}-byte limit."]
    assert messages(aws_t.INSTANCE, {"userDataBase64": b64(fits.encode())}, "user-data-safe") == []
    assert messages(aws_t.INSTANCE, {"userDataBase64": b64(over.encode())}, "user-data-safe") == [
        f"userDataBase64 is {LIMIT + 4} bytes in base64, over the {LIMIT}-byte limit."]
    not_base64 = "!" * (LIMIT + 1)
    assert messages(aws_t.LAUNCH_TEMPLATE, {"userData": not_base64}, "user-data-safe") == [
        f"userData is {LIMIT + 1} bytes in base64, over the {LIMIT}-byte limit."], "a base64 field is its own size"


def test_secrets_are_found_in_plain_base64_and_gzipped_user_data():
    assert messages(aws_t.INSTANCE, {"userData": SECRET}, "user-data-safe") == [f"userData {FOUND}"]
    assert messages(aws_t.LAUNCH_TEMPLATE, {"userData": b64(SECRET.encode())}, "user-data-safe") == [
        f"userData {FOUND}"]
    packed = b64(gzip.compress(SECRET.encode()))
    assert messages(aws_t.LAUNCH_TEMPLATE, {"userData": packed}, "user-data-safe") == [f"userData {FOUND}"]
    assert messages(aws_t.INSTANCE, {"userData": b64(SECRET.encode())}, "user-data-safe") == [], \
        "a plain-text field is not decoded"


def test_text_that_happens_to_decode_is_read_as_text_where_either_form_is_accepted():
    """Alibaba takes userData in either form: text whose letters and digits alone would decode (28 of them here)
    is still text, since base64 is read strictly."""
    text = "#cloud-config\npassword: hunter22x\n"
    assert messages(ali_t.INSTANCE, {"userData": text}, "user-data-safe") == [f"userData {FOUND}"]


def test_base64_that_is_not_utf8_is_still_searched():
    data = b64(b"\xff\xfe" + SECRET.encode())
    assert messages(aws_t.LAUNCH_TEMPLATE, {"userData": data}, "user-data-safe") == [f"userData {FOUND}"]
    assert messages(ali_t.INSTANCE, {"userData": data}, "user-data-safe") == [f"userData {FOUND}"]


def test_a_disk_whose_encryption_is_unknown_waits_for_the_engine():
    volume = {"blockDeviceMappings": [{"deviceName": "/dev/sdb", "ebs": {"encrypted": "[unknown]"}}]}
    assert messages(aws_t.LAUNCH_TEMPLATE, volume, "encrypted-volumes") == []


def test_values_the_rule_cannot_read_are_left_alone():
    for value in ("[unknown]", "[secret]", "", None, 42):
        assert messages(aws_t.INSTANCE, {"userData": value}, "user-data-safe") == [], value


def test_a_resource_of_an_unknown_cloud_is_refused_and_only_custom_resources_are_judged():
    refused = ["no gpufleet policy reader knows gcp resources, so none of its rules can judge this one; add "
               "policy/clouds/<cloud>.py for the cloud."]
    assert messages("gcp:compute/instance:Instance", {}, "known-cloud") == refused
    assert messages("gcp:compute/instance:Instance", {}, "known-cloud", custom=None) == refused, "custom by default"
    assert messages("gcp:compute/instance:Instance", {}, "known-cloud", custom=False) == []
    for kind in ("pulumi:pulumi:Stack", "pulumi:providers:aws", "gpufleet:aws:Cluster", aws_t.INSTANCE):
        assert messages(kind, {}, "known-cloud") == [], kind
