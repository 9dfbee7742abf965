"""`sluice.testing.check_gradients` on inputs large enough for its batched central differences
(one vmapped program instead of a session run per shifted element): right gradients pass,
wrong ones fail, whichever input is wrong."""

import numpy as np
import pytest

import sluice as sl
from sluice.testing import check_gradients

RNG = np.random.default_rng(7)


def test_batched_differences_accept_right_gradients():
    a, b = 0.3 * RNG.normal(size=(4, 100)), 0.3 * RNG.normal(size=(100, 3))
    check_gradients(lambda a, b: sl.tanh(sl.matmul(a, b)) * sl.reduce_sum(b), [a, b])


@pytest.mark.parametrize("wrong", [0, 1])
def test_batched_differences_catch_a_wrong_gradient(wrong):
    xs = [RNG.normal(size=(20, 20)), RNG.normal(size=(20, 20))]

    def build(x, y):
        inputs = [x, y]
        inputs[wrong] = sl.stop_gradient(inputs[wrong]) * 0.5 + inputs[wrong] * 0.5
        return sl.sin(inputs[0]) * inputs[1]

    with pytest.raises(AssertionError, match=f"gradient of input {wrong}"):
        check_gradients(build, xs)
