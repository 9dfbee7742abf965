"""DepthwiseConv1D and SeparableConv1D: the layer contract (channels last and first) and the
forward values against `lax` grouped convolutions (Keras's channel order c * m + j)."""

import numpy as np
import pytest
from jax import lax

from sluice import layers as L
from sluice.testing import run_layer_test

RNG = np.random.default_rng(29)


# the classes test_layer_contract runs through the layer contract
CONTRACT_CLASSES = [L.DepthwiseConv1D, L.SeparableConv1D]


@pytest.mark.parametrize(
    "cls, kwargs, shape, out_shape, weights",
    [
        (L.DepthwiseConv1D, dict(kernel_size=2, depth_multiplier=2), (2, 4, 2), (None, 3, 4),
         {"kernel": (2, 2, 2), "bias": (4,)}),
        (L.SeparableConv1D, dict(filters=3, kernel_size=2, strides=2, padding="same"),
         (2, 5, 2), (None, 3, 3), {"depthwise_kernel": (2, 2, 1),
                                   "pointwise_kernel": (1, 2, 3), "bias": (3,)}),
        (L.SeparableConv1D, dict(filters=2, kernel_size=2, data_format="channels_first",
                                 depth_multiplier=2, use_bias=False), (2, 2, 4), (None, 2, 3),
         {"depthwise_kernel": (2, 2, 2), "pointwise_kernel": (1, 4, 2)}),
    ],
)  # fmt: skip
def test_layer_contract(cls, kwargs, shape, out_shape, weights):
    run_layer_test(cls, kwargs, shape, out_shape, weights)


def grouped(x, kernel, strides, padding, dilation):
    """Each input channel c convolved with kernel[:, c, j] into output channel c * m + j."""
    k, c, m = kernel.shape
    return np.asarray(lax.conv_general_dilated(
        x, kernel.reshape(k, 1, c * m), strides, padding.upper(), rhs_dilation=dilation,
        dimension_numbers=("NWC", "WIO", "NWC"), feature_group_count=c,
    ))  # fmt: skip


@pytest.mark.parametrize("kwargs", [
    dict(kernel_size=3, depth_multiplier=2),
    pytest.param(dict(kernel_size=2, strides=2, padding="same"), marks=pytest.mark.slow),
    pytest.param(dict(kernel_size=2, dilation_rate=2, padding="same"), marks=pytest.mark.slow),
])  # fmt: skip
def test_forward_matches_lax(kwargs):
    x = RNG.normal(size=(2, 7, 3)).astype("float32")
    depthwise = L.DepthwiseConv1D(**kwargs, bias_initializer="random_normal")
    y = np.asarray(depthwise(x))
    kernel, bias = depthwise.get_weights()
    args = (depthwise.strides, depthwise.padding, depthwise.dilation_rate)
    np.testing.assert_allclose(y, grouped(x, kernel, *args) + bias, rtol=1e-5, atol=1e-6)
    separable = L.SeparableConv1D(4, **kwargs, bias_initializer="random_normal")
    y = np.asarray(separable(x))
    dk, pk, bias = separable.get_weights()
    np.testing.assert_allclose(y, grouped(x, dk, *args) @ pk[0] + bias, rtol=1e-5, atol=1e-6)
    first = L.SeparableConv1D(4, **kwargs, data_format="channels_first")
    first.build((None, 3, 7))
    first.set_weights(separable.get_weights())
    got = np.moveaxis(np.asarray(first(np.moveaxis(x, -1, 1))), 1, -1)
    np.testing.assert_allclose(got, y, rtol=1e-5, atol=1e-6)
    assert L.SeparableConvolution1D is L.SeparableConv1D
