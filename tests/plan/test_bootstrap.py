"""How node.env writes a value (plan/bootstrap.py `shell_value`): bash, sourcing it as every node script does, reads
back exactly the value the plan decided, whatever characters it holds."""

from __future__ import annotations

import subprocess

import pytest

from plan.bootstrap import shell_value


def read_back(value: object, *, array: bool = False) -> list[str]:
    """What bash holds after `GF_X=<value>`: the array's elements, or the one string."""
    expand = '"${GF_X[@]}"' if array else '"$GF_X"'
    script = f"GF_X={shell_value(value)}\nprintf '%s\\0' {expand}"
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout.split("\0")[:-1]


@pytest.mark.parametrize("text", ["it's", "a b", "$HOME `id` \\n", "'", "''", "say \"hi\"", ""])
def test_a_string_reads_back_unchanged(text):
    assert read_back(text) == [text]


def test_a_sequence_is_an_array_and_a_pair_reads_key_equals_value():
    assert read_back(("--model=gpt2", "it's two", ("NCCL_ALGO", "Ring")), array=True) == [
        "--model=gpt2", "it's two", "NCCL_ALGO=Ring"]


def test_a_flag_is_1_or_0_and_nothing_is_empty():
    assert (read_back(True), read_back(False), read_back(None)) == (["1"], ["0"], [""])
