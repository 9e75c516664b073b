"""Edges of the thresholds a catalog row sets: a zero figure is no figure (never a threshold of 0 every GPU passes),
and each threshold is written with six significant digits, as the node reads it."""

from __future__ import annotations

from plan.catalog import lookup
from plan.thresholds import ALLREDUCE_OF_BASELINE, TOLERANCE, thresholds

H200 = lookup("aws", "p5en.48xlarge")


def test_a_zero_figure_sets_no_threshold_and_the_estimate_stands_in_for_a_zero_measurement():
    zero = H200.model_copy(update={"measured_hbm_gbs": 0.0, "measured_p2p_gbs": 0.0, "busbw_baseline_gbs": 0.0,
                                   "cross_node_busbw_gbs": 0.0, "measured_matmul_tflops": 0.0})
    found = thresholds(zero)
    assert (found.hbm_gbs, found.p2p_gbs, found.allreduce_busbw_gbs, found.cross_node_busbw_gbs) == (None,) * 4
    assert found.matmul_tflops == thresholds(zero.model_copy(update={"measured_matmul_tflops": None})).matmul_tflops
    assert found.matmul_tflops is not None and found.matmul_tflops > 0
    no_peak = zero.model_copy(update={"peak_tflops_bf16": 0.0})
    assert thresholds(no_peak).matmul_tflops is None


def test_each_threshold_has_six_significant_digits():
    row = H200.model_copy(update={"measured_hbm_gbs": 1234.56789, "busbw_baseline_gbs": 333.333333,
                                  "cross_node_busbw_gbs": 1.0 / 3.0})
    found = thresholds(row)
    assert found.hbm_gbs == float(f"{1234.56789 * TOLERANCE:.6g}") == 987.654
    assert found.allreduce_busbw_gbs == float(f"{333.333333 * ALLREDUCE_OF_BASELINE:.6g}") == 233.333
    assert found.cross_node_busbw_gbs == 0.233333, "six significant digits, not six decimals"


def test_two_gpus_are_enough_for_an_all_reduce_threshold_and_one_is_not():
    pair = H200.model_copy(update={"gpus": 2})
    assert thresholds(pair).allreduce_busbw_gbs == thresholds(H200).allreduce_busbw_gbs is not None
    assert thresholds(H200.model_copy(update={"gpus": 1})).allreduce_busbw_gbs is None
