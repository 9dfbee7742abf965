"""A model never called nor built, as Keras 3 treats one: `get_weights()` and `weights` are
empty, `count_params()` raises a ValueError saying how to build it, and `summary()` lists the
layers with unknown shapes and "0 (unbuilt)" parameters (Keras 3's `summary_utils`)."""

import numpy as np
import pytest

import sluice as sl
from sluice import layers as L


class TwoDense(sl.Model):
    def __init__(self):
        super().__init__()
        self.hidden = L.Dense(4)
        self.out = L.Dense(1)

    def call(self, x):
        return self.out(self.hidden(x))


@pytest.mark.parametrize("make", [TwoDense, lambda: sl.Sequential([L.Dense(4), L.Dense(1)])])
def test_an_unbuilt_model_has_no_weights_and_says_it_is_not_built(make):
    model = make()
    assert not model.built
    assert model.get_weights() == [] and model.weights == [] and model.trainable_weights == []
    with pytest.raises(ValueError, match=r"isn't built. You can build it manually via"):
        model.count_params()
    lines = []
    model.summary(print_fn=lines.append)
    rows = [line for line in lines if "(Dense)" in line]
    assert len(rows) == 2 and all("?" in r and r.endswith("0 (unbuilt)") for r in rows)
    assert " Total params: 0" in lines
    model.build((None, 3))
    assert [w.shape for w in model.get_weights()] == [(3, 4), (4,), (4, 1), (1,)]
    assert model.count_params() == 21
    assert model.predict(np.ones((2, 3), np.float32), verbose=0).shape == (2, 1)
