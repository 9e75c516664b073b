"""Settings: overrides from the stack file, and clear exit-2 errors for bad ones."""

import pytest
import torch
from train_helpers import start, train

from training.config import ConfigError, TrainConfig, parse_args, settings


def test_overrides_accept_camel_and_snake_case():
    cfg = TrainConfig.from_overrides(
        {
            "microBatch": 8,
            "global_batch": "64",
            "activationCheckpointing": "true",
            "peakTflops": 989,
            "model": "tiny",
        }
    )
    assert (cfg.micro_batch, cfg.global_batch, cfg.activation_checkpointing, cfg.peak_tflops) == (
        8,
        64,
        True,
        989.0,
    )


@pytest.mark.parametrize("value", [3, "maybe", 0.5, [True]])
def test_a_flag_takes_only_true_or_false(value):
    with pytest.raises(ConfigError, match=r"'activation_checkpointing' expects bool"):
        TrainConfig.from_overrides({"activationCheckpointing": value})
    assert TrainConfig.from_overrides({"activationCheckpointing": 0}).activation_checkpointing is False


def test_unknown_override_key_is_named():
    with pytest.raises(ConfigError, match="'microBatchSize'"):
        TrainConfig.from_overrides({"microBatchSize": 8})


@pytest.mark.parametrize(
    "args, names",
    [
        (["--global-batch", "0"], ["global_batch", "at least 1"]),
        (["--micro-batch", "-1"], ["micro_batch", "at least 0"]),
        (["--dropout", "1"], ["dropout", "below 1"]),
        (["--data-dtype", "int8"], ["data_dtype", "uint16, uint32"]),
        (["--kernels", "on"], ["kernels", "auto, off"]),
        (["--model", "gpt5"], ["model", "gpt2-medium"]),
        (["--micro-batch", "lots"], ["micro_batch"]),
        (["--memory-limit-gb", "0.0001"], ["parameters, gradients and AdamW state alone", "model", "seq_len"]),
        (["--data", "/nonexistent/tokens.bin"], ["data"]),
        (["--run-dir", "/proc/gpufleet-run"], ["run_dir", "writable"]),
        pytest.param(
            ["--device", "cuda"],
            ["device", "no usable CUDA device"],
            marks=pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU"),
        ),
    ],
)
def test_bad_settings_exit_2_without_traceback(tmp_path, args, names):
    result = train(["--steps", "2", "--run-dir", str(tmp_path), *args], expect=2)
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") or "error:" in result.stderr
    for name in names:
        assert name in result.stderr


@pytest.mark.parametrize(
    ("name", "value", "rule"),
    [
        ("lr", 0.0, "greater than 0"),
        ("min_lr_ratio", 1.5, "between 0 and 1"),
        ("beta1", -0.1, "at least 0 and below 1"),
        ("beta2", 1.0, "at least 0 and below 1"),
        ("weight_decay", -0.01, "at least 0"),
        ("checkpoint_every", -1, "at least 0"),
        ("peak_tflops", -989.0, "at least 0"),
        ("bucket_cap_mb", 0, "at least 1"),
        ("lr", float("inf"), "a finite number"),
        ("memory_limit_gb", float("nan"), "a finite number"),
    ],
)
def test_out_of_range_numbers_name_the_setting_and_the_rule(name, value, rule):
    with pytest.raises(ConfigError, match=rf"Setting '{name}' must be {rule} \(got {value}\)"):
        TrainConfig(**{name: value})


def test_help_lists_every_setting_with_its_doc(capsys):
    with pytest.raises(SystemExit) as exit_info:
        parse_args(["--help"])
    shown = "".join(capsys.readouterr().out.split())  # argparse re-wraps lines, breaking at spaces and hyphens
    assert exit_info.value.code == 0
    for setting in settings():
        assert f"--{setting.name.replace('_', '-')}" in shown
        assert "".join(setting.doc.split()) in shown, setting.name


def test_unknown_flag_exits_2(tmp_path):
    process = start(["--micro-batch-size", "4"])  # the real command line: argparse exits by itself
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 2 and "Traceback" not in stderr and "--micro-batch-size" in stderr
