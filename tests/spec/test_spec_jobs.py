"""The `job` object reaches the node exactly as validated: one spelling per setting, each value of its setting's
type, and none of the settings every node sets itself."""

from __future__ import annotations

import pytest
from spec_cases import only, plan_of, problems

from spec.jobs import job_args
from training.config import TrainConfig, parse_args

RAW_JOBS = [
    {"steps": 40.0},
    {"LR": 0.001},
    {"lr": 1e-05, "warmupSteps": "10"},
    {"micro_batch": "8", "global_batch": 64.0},
    {"checkpointAtEnd": "no", "kernels": "off", "activation-checkpointing": "yes"},
    {"model": "tiny", "seqLen": 128, "dtype": "fp32", "compile": "off"},
    {"minLrRatio": 0, "gradClip": 0.5, "weightDecay": 1},
]


@pytest.mark.parametrize("job", RAW_JOBS)
def test_the_node_parses_what_the_spec_validated(tmp_path, job):
    spec, _ = plan_of(tmp_path, "aws", {"job": job})
    assert parse_args(list(job_args(spec.job.model_dump(exclude_unset=True)))) == TrainConfig.from_overrides(job)


def test_values_reach_the_node_in_their_settings_type(tmp_path):
    spec, plan = plan_of(tmp_path, "aws", {"job": {"steps": 40.0, "LR": 0.001, "seqLen": "128"}})
    assert spec.job.model_dump(by_alias=True, exclude_unset=True) == {"steps": 40, "lr": 0.001, "seqLen": 128}
    assert {"--steps=40", "--lr=0.001", "--seq-len=128"} <= set(job_args(spec.job.model_dump(exclude_unset=True)))
    assert "--steps=40'" in plan.head.user_data and "--steps=40.0" not in plan.head.user_data
    assert "--l-r" not in plan.head.user_data


@pytest.mark.parametrize("job, second", [
    ({"micro_batch": 8, "microBatch": 16}, "microBatch"),
    ({"LR": 0.1, "lr": 0.2}, "lr"),
    ({"seqLen": 64, "seq-len": 64}, "seq-len"),
])
def test_one_setting_spelled_twice_is_refused(tmp_path, job, second):
    problem = only(tmp_path, "aws", {"job": job})
    assert problem.path == f"gpufleet:cluster.job.{second}" and "are the same setting" in problem.message


@pytest.mark.parametrize("key", ["checkpointDir", "checkpoint_dir", "runDir", "resume"])
@pytest.mark.parametrize("value", [None, "/tmp/ckpt", False])
def test_settings_the_platform_owns_are_refused(tmp_path, key, value):
    problem = only(tmp_path, "aws", {"job": {key: value}})
    assert problem.path == f"gpufleet:cluster.job.{key}" and "set by gpufleet on every node" in problem.message
    assert problem.fix == "remove it."


def test_every_refused_setting_is_named_at_once(tmp_path):
    found = {p.path for p in problems(tmp_path, "aws", {"job": {"checkpointDir": "/x", "resume": False,
                                                               "steps": True, "data": {"path": "/d"}}})}
    assert found == {f"gpufleet:cluster.job.{key}" for key in ("checkpointDir", "resume", "steps", "data")}


@pytest.mark.parametrize("job, message", [
    ({"steps": True}, "got true, where a number belongs"),
    ({"lr": False}, "got false, where a number belongs"),
    ({"data": {"path": "/d"}}, "is a map"),
    ({"model": ["tiny"]}, "is a list"),
    ({"kernels": False}, "got false, where a word belongs"),
    ({"data": True}, "got true, where a word belongs"),
])
def test_values_of_the_wrong_shape_are_refused(tmp_path, job, message):
    problem = only(tmp_path, "aws", {"job": job})
    assert problem.path == f"gpufleet:cluster.job.{next(iter(job))}" and message in problem.message


def test_unknown_and_unparsable_settings_name_the_key_written(tmp_path):
    unknown = only(tmp_path, "aws", {"job": {"learningRate": 0.1}})
    assert unknown.path == "gpufleet:cluster.job.learningRate" and unknown.message.startswith("unknown key")
    fractional = only(tmp_path, "aws", {"job": {"steps": 40.5}})
    assert fractional.path == "gpufleet:cluster.job.steps" and fractional.fix == "write a whole number."
    kebab = only(tmp_path, "aws", {"job": {"seq-len": "long"}})
    assert kebab.path == "gpufleet:cluster.job.seq-len" and "integer" in kebab.message
