"""Data parallelism must not change the maths: 2 ranks == 1 process for the same global batch,
also across a restart that changes the world size."""

from train_helpers import assert_same_params, final_params, summary, train


def test_two_ranks_match_one_process(tmp_path):
    train(["--steps", "5", "--global-batch", "8", "--micro-batch", "4", "--run-dir", str(tmp_path / "one")])
    result = train(
        ["--steps", "5", "--global-batch", "8", "--micro-batch", "2", "--run-dir", str(tmp_path / "two")],
        nproc=2,
    )
    assert summary(result)["world_size"] == 2
    assert summary(result)["accum_steps"] == 2
    assert_same_params(
        final_params(tmp_path / "one/checkpoints"), final_params(tmp_path / "two/checkpoints"), atol=1e-5
    )


def test_resume_with_other_world_size_keeps_global_batch(tmp_path):
    common = ["--steps", "6", "--global-batch", "8", "--micro-batch", "2"]
    train([*common, "--run-dir", str(tmp_path / "straight")])
    elastic = ["--run-dir", str(tmp_path / "elastic")]
    first = summary(train([*common, *elastic, "--stop-after-steps", "3"], nproc=2))
    assert first["steps_completed"] == 3 and first["world_size"] == 2 and first["accum_steps"] == 2
    second = summary(train([*common, *elastic]))
    assert second["resumed_from_step"] == 3
    assert second["world_size"] == 1 and second["accum_steps"] == 4 and second["global_batch"] == 8
    assert second["data_position"] == 6 * 8
    assert_same_params(
        final_params(tmp_path / "straight/checkpoints"),
        final_params(tmp_path / "elastic/checkpoints"),
        atol=1e-5,
    )
