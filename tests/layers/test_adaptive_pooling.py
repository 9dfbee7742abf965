"""Adaptive pooling (1-D, 2-D, 3-D; average and max): the layer contract and the values against
a NumPy loop over Keras's windows [floor(i L / out), ceil((i + 1) L / out))."""

import itertools

import numpy as np
import pytest

from sluice import layers as L
from sluice.testing import run_layer_test

RNG = np.random.default_rng(31)


# the classes test_layer_contract runs through the layer contract
CONTRACT_CLASSES = [
    L.AdaptiveAveragePooling1D, L.AdaptiveAveragePooling2D, L.AdaptiveAveragePooling3D,
    L.AdaptiveMaxPooling1D, L.AdaptiveMaxPooling2D, L.AdaptiveMaxPooling3D,
]  # fmt: skip


@pytest.mark.parametrize(
    "cls, kwargs, shape, out_shape",
    [
        (L.AdaptiveAveragePooling1D, dict(output_size=2), (2, 5, 2), (None, 2, 2)),
        (L.AdaptiveMaxPooling2D, dict(output_size=(2, 3), data_format="channels_first"),
         (2, 2, 3, 4), (None, 2, 2, 3)),
        (L.AdaptiveAveragePooling3D, dict(output_size=(1, 2, 2)), (1, 3, 3, 2, 1),
         (None, 1, 2, 2, 1)),
    ],
)  # fmt: skip
def test_layer_contract(cls, kwargs, shape, out_shape):
    run_layer_test(cls, kwargs, shape, out_shape, {})


def np_adaptive(x, out, reduce):
    """channels last: each output position reduces its box of Keras's windows."""
    spatial = x.shape[1:-1]
    windows = [[((i * n) // o, -((-(i + 1) * n) // o)) for i in range(o)]
               for n, o in zip(spatial, out)]  # fmt: skip
    y = np.zeros((x.shape[0], *out, x.shape[-1]))
    for position in itertools.product(*(range(o) for o in out)):
        box = tuple(slice(*windows[a][i]) for a, i in enumerate(position))
        y[(slice(None), *position)] = reduce(x[(slice(None), *box)],
                                             axis=tuple(range(1, len(out) + 1)))  # fmt: skip
    return y


@pytest.mark.parametrize("rank, out", [(1, (3,)), (2, (3, 2)), (3, (2, 1, 3))])
def test_values_match_numpy(rank, out):
    shape = (2, *(7, 5, 4)[:rank], 3)
    x = RNG.normal(size=shape).astype("float32")
    average = getattr(L, f"AdaptiveAveragePooling{rank}D")
    maximum = getattr(L, f"AdaptiveMaxPooling{rank}D")
    np.testing.assert_allclose(np.asarray(average(out)(x)), np_adaptive(x, out, np.mean),
                               rtol=1e-5, atol=1e-6)  # fmt: skip
    np.testing.assert_array_equal(np.asarray(maximum(out)(x)), np_adaptive(x, out, np.max))


def test_errors():
    with pytest.raises(TypeError, match="output_size"):
        L.AdaptiveAveragePooling2D((2, 2, 2))
    with pytest.raises(ValueError, match="known spatial size"):
        L.AdaptiveMaxPooling2D(2)(L.Input((None, 4, 1)))
    with pytest.raises(ValueError, match="rank 4"):
        L.AdaptiveMaxPooling2D(2)(L.Input((4, 1)))
