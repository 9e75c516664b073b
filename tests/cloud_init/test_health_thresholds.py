"""The gate's thresholds, decided by the plan from real catalog rows (plan/thresholds.py), and each
decision they make on the node: a GPU at 60% of its clock or sharing its time fails, a healthy card that varies by a
few percent passes, an outlier among the node's GPUs fails."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "cloud-init"))

from health import matmul, memory
from health.result import judge
from health.thresholds import with_peers

from plan.catalog import lookup
from plan.thresholds import thresholds


def row(cloud: str, name: str, **changes):
    """A catalog row, with fields (the catalog model's attribute names) changed."""
    return lookup(cloud, name).model_copy(update=changes)


H200 = lookup("aws", "p5en.48xlarge")
HEALTHY_H200_TFLOPS = 740.0  # what this repository measured a power-capped H200 sustain (benchmarks/TRAINING.md)


def test_an_h200_row_sets_the_matmul_and_allreduce_thresholds():
    found = thresholds(H200)
    assert found.matmul_tflops == pytest.approx(539.52), "the H200's measured 674.4 x TOLERANCE"
    assert found.hbm_gbs == pytest.approx(3395.2), "the H200's measured 4244 GB/s x TOLERANCE"
    assert found.allreduce_busbw_gbs == pytest.approx(336.0)
    assert (found.p2p_gbs, found.cross_node_busbw_gbs) == (None, None), "one GPU, one machine: not measured"


def test_without_its_measurement_the_h200_falls_back_to_the_datasheet_estimate():
    assert thresholds(row("aws", "p5en.48xlarge", measured_matmul_tflops=None)).matmul_tflops == pytest.approx(593.4)


def test_the_lent_h200s_idle_and_slowed_figures_pass_and_fail():
    threshold = thresholds(H200).matmul_tflops
    for idle in (669.5, 671.1, 673.6, 674.4, 675.5):  # benchmarks/HEALTH.md, light and deep, two calls
        assert judge("matmul", "gpu0", idle, "TFLOP/s", threshold).ok
    for loaded in (312.3, 313.6):  # the same GPU while another process runs matmuls on it
        assert not judge("matmul", "gpu0", loaded, "TFLOP/s", threshold).ok


def test_a_healthy_h200_passes_and_a_slowed_one_fails_the_matmul_check():
    threshold = thresholds(H200).matmul_tflops
    assert judge("matmul", "gpu0", 0.96 * HEALTHY_H200_TFLOPS, "TFLOP/s", threshold).ok, "a card 4% slower passes"
    assert not judge("matmul", "gpu0", 0.6 * HEALTHY_H200_TFLOPS, "TFLOP/s", threshold).ok, "60% of its clock fails"
    assert not judge("matmul", "gpu0", 0.5 * HEALTHY_H200_TFLOPS, "TFLOP/s", threshold).ok, "half its time fails"


def test_measured_figures_replace_the_datasheet_estimate():
    measured = thresholds(row("aws", "p5en.48xlarge", measured_matmul_tflops=700, measured_hbm_gbs=4300,
                              measured_p2p_gbs=370, cross_node_busbw_gbs=400))
    assert measured.matmul_tflops == pytest.approx(560.0)
    assert measured.hbm_gbs == pytest.approx(3440.0) and measured.p2p_gbs == pytest.approx(296.0)
    assert measured.cross_node_busbw_gbs == pytest.approx(280.0)


def test_rows_without_figures_judge_nothing_they_cannot():
    assert thresholds(lookup("aws", "g4dn.xlarge")).allreduce_busbw_gbs is None, "one GPU: no all-reduce"
    assert thresholds(row("aws", "g4dn.xlarge", busbw_baseline_gbs=100)).allreduce_busbw_gbs is None, "even with one"
    assert thresholds(row("aws", "p5en.48xlarge", gpus=1)).allreduce_busbw_gbs is None
    assert all(value is None for value in vars(thresholds(lookup("local", "cpu"))).values()), "no figures at all"


def test_the_node_median_catches_an_outlier_the_catalog_would_pass():
    figures = {f"gpu{i}": 670.0 + i for i in range(7)} | {"gpu7": 560.0}  # above 539.5 but 16% below its peers
    rows = matmul.checks(figures, thresholds(H200).matmul_tflops, 8192)
    assert [r.subject for r in rows if not r.ok] == ["gpu7"]
    assert rows[0].threshold == pytest.approx(0.85 * 672.5) and "node median" in rows[0].detail
    alone = matmul.checks(figures, thresholds(H200).matmul_tflops, 8192, peers=False)
    assert all(r.ok for r in alone) and alone[0].threshold == pytest.approx(539.52)


def test_the_catalog_threshold_wins_when_every_gpu_is_slow():
    figures = {f"gpu{i}": 500.0 for i in range(8)}
    limit, source = with_peers(figures, thresholds(H200).matmul_tflops)
    assert limit == pytest.approx(539.52) and source == "catalog"
    assert not any(r.ok for r in matmul.checks(figures, thresholds(H200).matmul_tflops, 8192))


def test_a_pair_whose_nvlink_is_down_fails_the_p2p_check_without_a_catalog_figure():
    figures = {f"gpu0->gpu{j}": 370.0 for j in range(1, 8)} | {"gpu3->gpu5": 24.0}
    rows = memory.checks("p2p", figures, None, "copy")
    assert [r.subject for r in rows if not r.ok] == ["gpu3->gpu5"]


def test_a_figure_equal_to_its_threshold_passes():
    assert judge("hbm", "gpu0", 100.0, "GB/s", 100.0).ok
    assert not judge("hbm", "gpu0", 99.99, "GB/s", 100.0).ok
    assert judge("ecc", "gpu0", 0.0, "errors", 0.0, "<=").ok and not judge("ecc", "gpu0", 1.0, "errors", 0.0, "<=").ok
    assert not judge("matmul", "gpu0", None, "TFLOP/s", None).ok, "a figure that could not be measured fails"
    assert judge("matmul", "gpu0", 1.0, "TFLOP/s", None).ok, "no threshold: reported, not judged"
