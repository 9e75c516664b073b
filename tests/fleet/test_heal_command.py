"""`fleet heal` and `fleet roll` against a stand-in `pulumi` on PATH that records every argv and answers `stack
export` with the stack's states in turn (before and after a refresh, after each replacement), and an S3 bucket
(moto) holding the nodes' marks where the stack's checkpointUri puts them (plan/heal.py node_marks)."""

from __future__ import annotations

import json
import re
import sys
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from moto import mock_aws

from clouds import CLOUDS
from fleet import heal_command
from fleet.cli import main
from fleet.ess_groups import EssFailed
from fleet.node_marks import marks_reader, s3_client
from plan.group_roll import Member
from plan.lifecycle import MARK_DEADLINE_S
from plan.paths import PROJECT_ROOT

FAKE_PULUMI = f"""#!{sys.executable}
import json, os, sys
from pathlib import Path
test = Path(os.environ["FAKE_PULUMI_DIR"])
calls = [json.loads(line) for line in (test / "argv").read_text().splitlines()] if (test / "argv").exists() else []
with open(test / "argv", "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
if sys.argv[1:3] == ["stack", "export"]:
    states = json.loads((test / "states.json").read_text())
    exports = sum(1 for argv in calls if argv[:2] == ["stack", "export"])
    print(json.dumps({{"version": 3, "deployment": states[min(exports, len(states) - 1)]}}))
sys.exit(int(os.environ.get("FAKE_PULUMI_RC", "0")) if sys.argv[1] == "up" else 0)
"""
BUCKET, CHECKPOINTS = "gpufleet-bucket", "oss://gpufleet-bucket/c/checkpoints"
KIND = {"ali-erdma": "alicloud:ecs/instance:Instance", "tencent-hcc": "tencentcloud:Instance/instance:Instance"}
STATE = {"ali-erdma": "status", "tencent-hcc": "instanceStatus"}


def urn(stack: str, name: str) -> str:
    return f"urn:pulumi:{stack}::gpufleet::{KIND[stack]}::{name}"


def state(stack: str, nodes: dict[str, tuple[str, str] | None]) -> dict:
    """A deployment holding the stack's outputs and each node (name -> (instance id, state); None: not held)."""
    resources = [{"urn": f"urn:pulumi:{stack}::gpufleet::pulumi:pulumi:Stack::gpufleet-{stack}",
                  "type": "pulumi:pulumi:Stack", "outputs": {"checkpointUri": CHECKPOINTS}}]
    for name, held in nodes.items():
        if held:
            role = "head" if name.endswith("head") else "worker"
            resources.append({"urn": urn(stack, name), "type": KIND[stack], "id": held[0],
                              "inputs": {"tags": {"gpufleet:role": role, "gpufleet:cluster": "c"}},
                              "outputs": {STATE[stack]: held[1]}})
    return {"resources": resources}


@pytest.fixture
def cloud(tmp_path, monkeypatch):
    """set(states, marks) -> the argv list of every pulumi call made so far (a function)."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin/pulumi").write_text(FAKE_PULUMI)
    (tmp_path / "bin/pulumi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:" + __import__("os").environ["PATH"])
    monkeypatch.setenv("FAKE_PULUMI_DIR", str(tmp_path))
    monkeypatch.setattr(heal_command, "POLL_S", 0)
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        monkeypatch.setattr(heal_command, "s3_client", lambda *_: s3)

        def setup(states: list[dict], marks: dict[str, str]):
            (tmp_path / "states.json").write_text(json.dumps(states))
            for instance, mark in marks.items():
                s3.put_object(Bucket=BUCKET, Key=f"c/nodes/{instance}", Body=f"{mark}\n".encode())

            def calls() -> list[list[str]]:
                argv = tmp_path / "argv"
                return [json.loads(line) for line in argv.read_text().splitlines()] if argv.exists() else []

            return calls

        yield setup


def ups(calls) -> list[list[str]]:
    """Each `pulumi up`'s arguments, less the ones every call has."""
    common = {"up", "--yes", "--skip-preview", "--policy-pack", "policy", "--stack", "--non-interactive"}
    return [[a for a in argv if a not in common and not a.startswith(("ali-", "tencent-"))]
            for argv in calls() if argv[0] == "up"]


@pytest.mark.parametrize("stack", sorted(KIND))
def test_heal_replaces_the_failed_and_the_dead_one_up_each_the_head_last(cloud, stack, capsys):
    running, off = ("Running", "Stopped") if stack == "ali-erdma" else ("RUNNING", "STOPPED")
    names = [f"{stack}-head", f"{stack}-worker-0", f"{stack}-worker-1", f"{stack}-worker-2"]
    before = state(stack, {names[0]: ("i-h", running), names[1]: ("i-0", running), names[2]: ("i-1", running),
                           names[3]: ("i-2", running)})
    # After the refresh: the head powered off, worker-2 gone; worker-1 had marked itself failed.
    after = state(stack, {names[0]: ("i-h", off), names[1]: ("i-0", running), names[2]: ("i-1", running),
                          names[3]: None})
    calls = cloud([before, after], {"i-h": "in-service", "i-0": "in-service", "i-1": "failed:nccl:allreduce"})
    assert main(["heal", "--stack", stack]) == 0, capsys.readouterr().err
    argv = calls()
    assert argv[0][:2] == ["stack", "export"] and argv[2][:2] == ["stack", "export"]
    refresh = argv[1]
    assert refresh[:3] == ["refresh", "--yes", "--skip-preview"]
    assert [refresh[i + 1] for i, a in enumerate(refresh) if a == "--target"] == [urn(stack, n) for n in names]
    w1, w2, head = urn(stack, names[2]), urn(stack, names[3]), urn(stack, names[0])
    assert ups(calls) == [["--target", w1, "--replace", w1, "--target-dependents"],
                          ["--target", w2, "--target-dependents"],
                          ["--target", head, "--replace", head, "--target-dependents"]]
    out = capsys.readouterr().out
    assert "nccl:allreduce" in out and f"its instance is {off}" in out and "gone" in out


def test_heal_times_a_node_without_a_mark_and_replaces_it_once_past_the_deadline(cloud, capsys):
    stack = "ali-erdma"
    nodes = {f"{stack}-head": ("i-h", "Running"), f"{stack}-worker-0": ("i-0", "Running")}
    calls = cloud([state(stack, nodes)] * 2, {"i-h": "in-service"})
    s3 = heal_command.s3_client("alicloud", "ap-southeast-1")
    record = {"Bucket": BUCKET, "Key": "c/nodes-unmarked/i-0"}
    # A record of the head from an earlier run, before it marked itself: it goes.
    s3.put_object(Bucket=BUCKET, Key="c/nodes-unmarked/i-h", Body=b"2026-12-03T08:00:00+00:00")
    assert main(["heal", "--stack", stack]) == 0, capsys.readouterr().err
    assert ups(calls) == [], "first seen without a mark: booting"
    first = datetime.fromisoformat(s3.get_object(**record)["Body"].read().decode())
    assert abs((datetime.now(UTC) - first).total_seconds()) < 60
    assert "Contents" not in s3.list_objects_v2(Bucket=BUCKET, Prefix="c/nodes-unmarked/i-h")
    assert main(["heal", "--stack", stack]) == 0
    assert ups(calls) == [], "seen again within the deadline: its record stands"
    assert datetime.fromisoformat(s3.get_object(**record)["Body"].read().decode()) == first
    # First seen longer ago than the bootstrap and the gate may take: hung, replaced, its record gone.
    long_ago = datetime.now(UTC) - timedelta(seconds=MARK_DEADLINE_S + 120)
    s3.put_object(**record, Body=long_ago.isoformat().encode())
    capsys.readouterr()
    assert main(["heal", "--stack", stack]) == 0
    w0 = urn(stack, f"{stack}-worker-0")
    assert ups(calls) == [["--target", w0, "--replace", w0, "--target-dependents"]]
    waited = re.search(r"worker-0 \(i-0\): no mark (\d+) s after it was first seen", capsys.readouterr().out)
    assert waited and MARK_DEADLINE_S + 120 <= int(waited[1]) < MARK_DEADLINE_S + 180
    assert "Contents" not in s3.list_objects_v2(Bucket=BUCKET, Prefix="c/nodes-unmarked/")


def test_heal_refuses_past_the_budget_and_says_why(cloud, capsys):
    stack = "ali-erdma"
    nodes = {f"{stack}-head": ("i-h", "Running"), **{f"{stack}-worker-{i}": (f"i-{i}", "Running") for i in range(3)}}
    reason = "driver:570.133.20:min=580"
    calls = cloud([state(stack, nodes)] * 2, {"i-h": "in-service", **{f"i-{i}": f"failed:{reason}" for i in range(3)}})
    assert main(["heal", "--stack", stack]) == 1
    assert ups(calls) == [], "nothing replaced: a new node boots the same image"
    err = capsys.readouterr().err
    assert err.count("is not replaced") == 3 and "past the failure budget of 2" in err and reason in err


def test_a_failed_pulumi_step_exits_1_naming_it(cloud, monkeypatch, capsys):
    stack = "ali-erdma"
    nodes = {f"{stack}-head": ("i-h", "Stopped")}
    cloud([state(stack, nodes)] * 2, {})
    monkeypatch.setenv("FAKE_PULUMI_RC", "255")
    assert main(["heal", "--stack", stack]) == 1
    assert "exited 255" in capsys.readouterr().err


@pytest.mark.parametrize("stack", sorted(KIND))
def test_roll_replaces_fixed_workers_one_at_a_time_waiting_for_each(cloud, stack, capsys):
    w = [f"{stack}-worker-{i}" for i in range(2)]
    first = state(stack, {f"{stack}-head": ("i-h", "x"), w[0]: ("i-0", "x"), w[1]: ("i-1", "x")})
    # Each targeted up replaced its worker: the export after it holds the new instance.
    one = state(stack, {f"{stack}-head": ("i-h", "x"), w[0]: ("i-0b", "x"), w[1]: ("i-1", "x")})
    two = state(stack, {f"{stack}-head": ("i-h", "x"), w[0]: ("i-0b", "x"), w[1]: ("i-1b", "x")})
    calls = cloud([first, one, two], {"i-0b": "in-service", "i-1b": "in-service"})
    assert main(["roll", "--stack", stack]) == 0, capsys.readouterr().err
    u0, u1 = urn(stack, w[0]), urn(stack, w[1])
    assert ups(calls) == [["--exclude", u0, "--exclude", u1, "--exclude-dependents"],
                          ["--target", u0, "--target-dependents"], ["--target", u1, "--target-dependents"]]


def test_roll_stops_at_a_worker_that_failed_its_gate(cloud, capsys):
    stack = "tencent-hcc"
    w = [f"{stack}-worker-{i}" for i in range(2)]
    first = state(stack, {w[0]: ("i-0", "x"), w[1]: ("i-1", "x")})
    one = state(stack, {w[0]: ("i-0b", "x"), w[1]: ("i-1", "x")})
    calls = cloud([first, one], {"i-0b": "failed:gpus:7/8"})
    assert main(["roll", "--stack", stack, "--timeout", "2"]) == 1
    assert len(ups(calls)) == 2, "the second worker stays in the job"
    assert "failed its gate (failed:gpus:7/8)" in capsys.readouterr().err


def test_roll_stops_when_a_worker_never_passes_its_gate(cloud, capsys):
    stack = "ali-erdma"
    first = state(stack, {f"{stack}-worker-0": ("i-0", "x"), f"{stack}-worker-1": ("i-1", "x")})
    calls = cloud([first], {})
    assert main(["roll", "--stack", stack, "--timeout", "0"]) == 1
    assert len(ups(calls)) == 2 and "did not pass its gate within 0 s" in capsys.readouterr().err


def tencent_state(user_data: dict[str, str]) -> dict:
    """tencent-spot's deployment: the stack's outputs and each AS group (id -> its launch configuration's userData)."""
    stack = "tencent-spot"
    resources = [{"urn": f"urn:pulumi:{stack}::gpufleet::pulumi:pulumi:Stack::gpufleet-{stack}",
                  "type": "pulumi:pulumi:Stack", "outputs": {"checkpointUri": CHECKPOINTS}}]
    for group_id, data in user_data.items():
        resources += [
            {"urn": f"urn:pulumi:{stack}::gpufleet::tencentcloud:As/scalingConfig:ScalingConfig::{group_id}-config",
             "type": "tencentcloud:As/scalingConfig:ScalingConfig", "id": f"{group_id}-lc",
             "inputs": {"userData": data}},
            {"urn": f"urn:pulumi:{stack}::gpufleet::tencentcloud:As/scalingGroup:ScalingGroup::{group_id}",
             "type": "tencentcloud:As/scalingGroup:ScalingGroup", "id": group_id,
             "inputs": {"configurationId": f"{group_id}-lc"}}]
    return {"resources": resources}


class FakeRefreshes:
    """AS's refresh activities as the API documents them: StartInstanceRefresh answers an activity id, and
    DescribeRefreshActivities its status, here `statuses` in turn (the last one stays)."""

    def __init__(self, statuses: list[str]) -> None:
        self.statuses, self.started, self.cancelled = statuses, [], []

    def start(self, group_id: str) -> str:
        self.started.append(group_id)
        return f"asr-{len(self.started)}"

    def status(self, activity_id: str) -> str:
        return self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]

    def cancel(self, group_id: str, activity_id: str) -> None:
        self.cancelled.append((group_id, activity_id))


@pytest.fixture
def refresh(cloud, monkeypatch):
    """(state before the up, state after it, statuses) -> (the fake AS, the pulumi calls)."""

    def setup(before: dict, after: dict, statuses: list[str]):
        monkeypatch.setattr(heal_command, "ess_groups", lambda _: pytest.fail("no ESS call on Tencent"))
        calls = cloud([before, after], {})
        fake = FakeRefreshes(statuses)
        monkeypatch.setattr(heal_command, "as_refreshes", lambda region: fake)
        return fake, calls

    return setup


def test_a_groups_first_up_starts_no_refresh(refresh):
    """Both groups are new with this `pulumi up`: their members launch from the current settings."""
    fake, calls = refresh({"resources": []}, tencent_state({"asg-od": "B", "asg-spot": "B"}), ["SUCCESSFUL"])
    assert main(["roll", "--stack", "tencent-spot"]) == 0
    assert ups(calls) == [[]] and fake.started == []


def test_a_user_data_change_refreshes_each_group_once_and_only_then(refresh, capsys):
    fake, _ = refresh(tencent_state({"asg-od": "A", "asg-spot": "A"}), tencent_state({"asg-od": "B", "asg-spot": "B"}),
                      ["RUNNING", "SUCCESSFUL"])
    assert main(["roll", "--stack", "tencent-spot"]) == 0, capsys.readouterr().err
    assert fake.started == ["asg-od", "asg-spot"]
    # The next roll with nothing changed: the record says the members run the current settings.
    fake, _ = refresh(tencent_state({"asg-od": "B", "asg-spot": "B"}), tencent_state({"asg-od": "B", "asg-spot": "B"}),
                      ["SUCCESSFUL"])
    assert main(["roll", "--stack", "tencent-spot"]) == 0 and fake.started == []


def test_a_refresh_that_pauses_is_cancelled_and_the_next_roll_refreshes_again(refresh, capsys):
    """A failed batch (FAILED_PAUSE, where AUTO_CANCEL did not end it) keeps AS's group disabled: the roll cancels it,
    says what to do and exits 1; the record did not move, so the next roll starts the refresh again."""
    fake, _ = refresh(tencent_state({"asg-od": "A"}), tencent_state({"asg-od": "B"}), ["RUNNING", "FAILED_PAUSE"])
    assert main(["roll", "--stack", "tencent-spot"]) == 1
    assert fake.started == ["asg-od"] and fake.cancelled == [("asg-od", "asr-1")]
    err = capsys.readouterr().err
    assert "refresh asr-1 ended FAILED_PAUSE (cancelled)" in err and "`fleet roll` again" in err
    fake, _ = refresh(tencent_state({"asg-od": "B"}), tencent_state({"asg-od": "B"}), ["SUCCESSFUL"])
    assert main(["roll", "--stack", "tencent-spot"]) == 0 and fake.started == ["asg-od"]


GROUP_ID, NEW_TAG, OLD_TAG = "asg-workers", "f516eea413a284a3", "0c1d2e3f40516273"


def ess_state(user_data: str = NEW_TAG, desired: int = 3, max_size: int = 5) -> dict:
    """ali-spot's deployment after its `pulumi up`: the group with the size the stack gives it (ali-spot's workers: 3
    expected, at most 5), its configuration (changed in place: its user-data tag is the new one) and the stack's
    outputs."""
    stack = "ali-spot"
    return {"resources": [
        {"urn": f"urn:pulumi:{stack}::gpufleet::pulumi:pulumi:Stack::gpufleet-{stack}", "type": "pulumi:pulumi:Stack",
         "outputs": {"checkpointUri": CHECKPOINTS}},
        {"urn": f"urn:pulumi:{stack}::gpufleet::gpufleet:alicloud:Workers$alicloud:ess/scalingGroup:ScalingGroup::"
                f"{stack}-workers", "type": "alicloud:ess/scalingGroup:ScalingGroup", "id": GROUP_ID,
         "inputs": {"minSize": 1, "desiredCapacity": desired, "maxSize": max_size}},
        {"urn": f"urn:pulumi:{stack}::gpufleet::gpufleet:alicloud:Workers$alicloud:ess/scalingConfiguration:"
                f"ScalingConfiguration::{stack}-worker-config", "type": "alicloud:ess/scalingConfiguration:"
         "ScalingConfiguration", "id": "asc-1",
         "inputs": {"scalingGroupId": GROUP_ID, "tags": {"gpufleet:role": "worker", "gpufleet:user-data": user_data}}},
    ]}


class FakeEss:
    """ESS as its API documents it (docs/cloud-facts.md#rollout-alibaba), for a group whose members are `members`:
    it keeps the expected number of instances (ModifyScalingGroup DesiredCapacity), launching from the current
    configuration (tagged NEW_TAG; each launched instance writes `successor_mark` in the bucket, None: none) or
    removing the surplus by the group's removal policy, NewestInstance first; it takes MaxSize >= DesiredCapacity >=
    MinSize only; RemoveInstances fails below MinSize and lowers the expected number (DecreaseDesiredCapacity). An
    instance reported unhealthy is removed, and nothing says ESS launches one in its place, so this one does not."""

    def __init__(self, s3, members: list[Member], successor_mark: str | None = "in-service", desired: int = 3,
                 max_size: int = 5, min_size: int = 1) -> None:
        self.s3, self.held, self.successor_mark = s3, list(members), successor_mark
        self.desired, self.max_size, self.min_size = desired, max_size, min_size
        self.sizes: list[tuple[int, int]] = []
        self.removed: list[str] = []
        self.launched = 0

    def members(self, group_id: str) -> list[Member]:
        assert group_id == GROUP_ID
        return list(self.held)

    def resize(self, group_id: str, size) -> None:
        assert group_id == GROUP_ID and size.max_size >= size.desired >= self.min_size, size
        self.sizes.append((size.desired, size.max_size))
        self.desired, self.max_size = size.desired, size.max_size
        self._keep_expected()

    def remove(self, group_id: str, instance_id: str) -> None:
        if len(self.held) - 1 < self.min_size:
            raise EssFailed("ESS RemoveInstances failed: below MinSize")
        self.held = [m for m in self.held if m.instance_id != instance_id]
        self.removed.append(instance_id)
        self.desired -= 1

    def take_out(self, instance_id: str) -> None:
        self.held = [m for m in self.held if m.instance_id != instance_id]

    def _keep_expected(self) -> None:
        while len(self.held) < self.desired:
            self.launched += 1
            launched = Member(f"i-new{self.launched}", "Pending", f"2026-12-09T09:00:0{self.launched}Z", NEW_TAG)
            self.held.append(launched)
            if self.successor_mark:
                self.s3.put_object(Bucket=BUCKET, Key=f"c/nodes/{launched.instance_id}",
                                   Body=self.successor_mark.encode())
        while len(self.held) > self.desired:
            newest = max(self.held, key=lambda m: m.added)
            self.held.remove(newest)
            self.removed.append(newest.instance_id)


@pytest.fixture
def ess(cloud, monkeypatch):
    """members, successor_mark, desired, max_size -> (the fake ESS, the pulumi calls); the stack's state is
    ess_state() with that size."""

    def setup(members: list[Member], successor_mark: str | None = "in-service", desired: int = 3, max_size: int = 5):
        calls = cloud([ess_state(desired=desired, max_size=max_size)], {})
        s3 = heal_command.s3_client("alicloud", "ap-southeast-1")
        fake = FakeEss(s3, members, successor_mark, desired, max_size)
        monkeypatch.setattr(heal_command, "ess_groups", lambda region: fake)
        return fake, calls

    return setup


def test_roll_has_ess_replace_the_members_launched_from_older_settings_one_at_a_time(ess, capsys):
    members = [Member("i-b", "InService", "2026-12-02T09:00:00Z", OLD_TAG),
               Member("i-a", "InService", "2026-12-01T09:00:00Z", None),
               Member("i-c", "InService", "2026-12-03T09:00:00Z", NEW_TAG)]
    fake, calls = ess(members)
    assert main(["roll", "--stack", "ali-spot", "--timeout", "5"]) == 0, capsys.readouterr().err
    assert ups(calls) == [[]], "one plain `pulumi up` changes the configuration in place"
    assert fake.removed == ["i-a", "i-b"], "the longest-serving first; the one launched from the new settings stays"
    # Each time: one more expected (a successor launched from the current configuration), then the stack's size.
    assert fake.sizes == [(4, 5), (3, 5), (4, 5), (3, 5)]
    assert sorted(m.instance_id for m in fake.held) == ["i-c", "i-new1", "i-new2"] and fake.desired == 3
    out = capsys.readouterr().out
    assert "i-a's successor in ali-spot-workers (i-new1) is in service" in out and "(2 of 2)" in out


def test_a_group_at_its_maximum_grows_past_it_for_the_roll_and_goes_back(ess, capsys):
    members = [Member(f"i-{n}", "InService", f"2026-12-0{n}T09:00:00Z", OLD_TAG) for n in (1, 2)]
    fake, _ = ess(members, desired=2, max_size=2)
    assert main(["roll", "--stack", "ali-spot", "--timeout", "5"]) == 0, capsys.readouterr().err
    assert fake.sizes == [(3, 3), (2, 2), (3, 3), (2, 2)] and fake.removed == ["i-1", "i-2"]


def test_roll_stops_at_a_successor_that_failed_its_gate(ess, capsys):
    members = [Member(f"i-{n}", "InService", f"2026-12-0{n}T09:00:00Z", OLD_TAG) for n in (1, 2, 3)]
    fake, _ = ess(members, successor_mark="failed:gpus:7/8")
    assert main(["roll", "--stack", "ali-spot", "--timeout", "5"]) == 1
    assert fake.removed == ["i-new1"], "the failed successor goes (the newest), every old member stays in the job"
    assert fake.held == members and fake.sizes == [(4, 5), (3, 5)]
    err = capsys.readouterr().err
    assert "(i-new1) failed its gate (failed:gpus:7/8)" in err and "i-1 stays in the job" in err


def test_roll_stops_when_no_successor_passes_its_gate_in_time(ess, capsys):
    members = [Member(f"i-{n}", "InService", f"2026-12-0{n}T09:00:00Z", OLD_TAG) for n in (1, 2, 3)]
    fake, _ = ess(members, None)
    assert main(["roll", "--stack", "ali-spot", "--timeout", "0"]) == 1
    assert fake.held == members and fake.sizes == [(4, 5), (3, 5)]
    assert "i-1's successor in ali-spot-workers did not pass its gate within 0 s" in capsys.readouterr().err


def test_a_group_rolled_already_is_left_alone(ess):
    members = [Member("i-c", "InService", "2026-12-03T09:00:00Z", NEW_TAG)]
    fake, _ = ess(members, desired=1)
    assert main(["roll", "--stack", "ali-spot"]) == 0
    assert fake.sizes == [] and fake.held == members


def test_heal_of_a_stack_without_node_instances_touches_nothing(cloud, capsys):
    calls = cloud([{"resources": []}], {})
    assert main(["heal", "--stack", "ali-spot"]) == 0
    assert [argv[:2] for argv in calls()] == [["stack", "export"]], "no refresh, no up"
    assert "nothing to heal" in capsys.readouterr().out


def test_the_local_cluster_rolls_with_fleet_up_and_heals_only_while_it_runs(capsys, tmp_path):
    stack = tmp_path / "Pulumi.lt-none.yaml"
    stack.write_text((PROJECT_ROOT / "stacks/Pulumi.local.yaml").read_text())
    assert main(["roll", "--stack-file", str(stack)]) == 2
    assert "`fleet up` again rolls its nodes" in capsys.readouterr().err
    assert main(["heal", "--stack-file", str(stack)]) == 2
    assert "is not running" in capsys.readouterr().err


@pytest.mark.parametrize(("cloud_name", "region", "endpoint", "expected"), [
    # docs/cloud-facts.md#oss-s3-api, #alibaba-oss-public-endpoint, #tencent-cos
    ("alicloud", "ap-southeast-1", None, "https://s3.oss-ap-southeast-1.aliyuncs.com"),
    ("alicloud", "cn-hangzhou", None, "https://s3.oss-cn-hangzhou-internal.aliyuncs.com"),
    ("alicloud", "cn-hangzhou", "public", "https://s3.oss-cn-hangzhou.aliyuncs.com"),
    ("tencentcloud", "ap-shanghai", None, "https://cos.ap-shanghai.myqcloud.com"),
])
def test_each_store_is_read_through_its_s3_api_virtual_hosted(cloud_name, region, endpoint, expected):
    """Where the plan's pipeline reaches the store: `fleet heal` and `fleet roll` read marks through that endpoint."""
    env = {"ALICLOUD_ACCESS_KEY": "ak", "ALICLOUD_SECRET_KEY": "sk", "TENCENTCLOUD_SECRET_ID": "ak",
           "TENCENTCLOUD_SECRET_KEY": "sk"}
    client = s3_client(CLOUDS[cloud_name].pipeline(region, endpoint).store, region, environ=env)
    assert client.meta.endpoint_url == expected
    assert client.meta.config.s3["addressing_style"] == "virtual", "OSS refuses path-style requests"
    assert client._request_signer._credentials.access_key == "ak"


def test_a_node_without_a_mark_reads_as_none():
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        s3.put_object(Bucket=BUCKET, Key="c/nodes/i-1", Body=b"in-service\n")
        read = marks_reader(s3, "s3://gpufleet-bucket/c/nodes")
        assert (read("i-1"), read("i-2")) == ("in-service", None)
