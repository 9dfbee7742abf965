"""benchmarks/flops.py: the FLOP counting rules, checked against brute force, against the
parameters a Keras model creates and against XLA's count of the hand-written JAX step."""

import numpy as np
import pytest

import sluice as keras
from benchmarks import flops, jax_baseline
from benchmarks.workloads import RnnWorkload, VggWorkload

TINY_RNN = {
    cell: RnnWorkload(f"tiny {cell}", cell, batch=4, time=3, inputs=8, hidden=32, classes=5)
    for cell in ("lstm", "gru")
}
TINY_VGG = VggWorkload("tiny vgg", batch=2, image=8, layers=(16, "M", 16, "M"), dense=16)


def test_matmul_is_two_flops_per_multiply_add():
    a, b = np.ones((2, 3)), np.ones((3, 4))
    assert flops.matmul(2, 3, 4) == 2 * (a @ b).sum() == 48


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_conv3x3_counts_taps_inside_the_image(size):
    # brute force: for every output position, the 3x3 window's taps that fall in the image
    inside = sum(
        0 <= i + di < size and 0 <= j + dj < size
        for i in range(size)
        for j in range(size)
        for di in (-1, 0, 1)
        for dj in (-1, 0, 1)
    )
    assert flops.conv3x3(size, size, 3, 5, padded=False) == 2 * inside * 3 * 5
    assert flops.conv3x3(size, size, 3, 5) == 2 * 9 * size * size * 3 * 5


def test_step_flops_parts_add_up():
    counted = flops.step_flops(TINY_RNN["lstm"])
    assert counted.as_dict()["total"] == counted.forward + counted.backward + counted.update
    # backward: a weight gradient as large as the forward, plus the recurrent data gradient
    assert counted.forward < counted.backward < 2 * counted.forward


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_rnn_params_match_a_keras_model(cell):
    w = TINY_RNN[cell]
    rnn = keras.layers.LSTM if cell == "lstm" else keras.layers.GRU
    # Keras 3's GRU (reset_after) has a second bias of 3H; TF1's GRUCell, counted here, has not
    extra = 0 if cell == "lstm" else 3 * w.hidden
    model = keras.Sequential(
        [keras.Input((w.time, w.inputs)), rnn(w.hidden), keras.layers.Dense(w.classes)]
    )
    assert flops.rnn_params(w) + extra == model.count_params()


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_rnn_count_is_close_below_xla_unrolled(cell):
    # XLA counts every op of the unrolled step: ours plus the elementwise ops we ignore and the
    # input part of d[x_t, h] that the baseline computes and drops (about 12% at these shapes)
    w = TINY_RNN[cell]
    x, y = w.data()
    xla = flops.xla_flops(jax_baseline.rnn_step(w, unroll=True).lowered(x, y))
    assert 1.0 < xla / flops.step_flops(w).total < 1.2


def test_vgg_count_matches_xla_without_padding():
    x, y = TINY_VGG.data()
    xla = flops.xla_flops(jax_baseline.vgg_step(TINY_VGG).lowered(x, y))
    # XLA counts only the kernel taps inside the image, and the bias adds, ReLUs and pooling we
    # ignore (3% at these narrow shapes, under 1% on W4)
    assert 1.0 < xla / flops.vgg_step_flops(TINY_VGG, padded=False).total < 1.05
    assert flops.vgg_step_flops(TINY_VGG).total > flops.vgg_step_flops(TINY_VGG, padded=False).total


def test_matmul_rate_reports_median_and_best():
    rate = flops.matmul_rate(n=64, repeats=3)
    assert 0 < rate["median_gflops"] <= rate["best_gflops"]
    assert (rate["n"], rate["repeats"]) == (64, 3)
