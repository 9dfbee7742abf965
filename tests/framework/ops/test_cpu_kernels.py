"""Each CPU-specialised kernel equals the generic kernel it replaces."""

import numpy as np
import pytest

from sluice.framework.ir import registry
from sluice.framework.ops.nn import cpu_kernels  # noqa: F401  (registers them)

RNG = np.random.default_rng(0)


def conv_attrs(stride=1, padding="SAME", dilation=1, explicit=()):
    return {
        "strides": [1, stride, stride, 1],
        "padding": padding,
        "explicit_paddings": list(explicit),
        "dilations": [1, dilation, dilation, 1],
        "data_format": "NHWC",
        "use_cudnn_on_gpu": True,
    }


CONV_CASES = [
    ((2, 8, 8, 3), (3, 3, 3, 4), conv_attrs()),
    ((2, 8, 8, 3), (3, 3, 3, 4), conv_attrs(padding="VALID")),
    ((1, 9, 7, 2), (3, 3, 2, 5), conv_attrs(stride=2)),
    ((1, 9, 9, 2), (3, 3, 2, 3), conv_attrs(dilation=2)),
    ((1, 6, 6, 2), (1, 1, 2, 3), conv_attrs()),
    ((1, 6, 6, 2), (2, 3, 2, 3), conv_attrs(padding="EXPLICIT", explicit=(0, 0, 1, 2, 0, 1, 0, 0))),
]


def both(op_type):
    return registry.get_kernel(op_type), registry.get_kernel(op_type, "cpu")


@pytest.mark.parametrize("x_shape, w_shape, attrs", CONV_CASES)
def test_im2col_conv_and_its_backprops_equal_the_generic_kernels(x_shape, w_shape, attrs):
    x = RNG.normal(size=x_shape).astype(np.float32)
    w = RNG.normal(size=w_shape).astype(np.float32)
    generic, cpu = both("Conv2D")
    y = np.asarray(generic(x, w, **attrs))
    np.testing.assert_allclose(cpu(x, w, **attrs), y, rtol=1e-4, atol=1e-4)
    dy = RNG.normal(size=y.shape).astype(np.float32)
    generic, cpu = both("Conv2DBackpropInput")
    np.testing.assert_allclose(
        cpu(np.array(x_shape), w, dy, **attrs),
        generic(np.array(x_shape), w, dy, **attrs),
        rtol=1e-4,
        atol=1e-4,
    )
    generic, cpu = both("Conv2DBackpropFilter")
    np.testing.assert_allclose(
        cpu(x, np.array(w_shape), dy, **attrs),
        generic(x, np.array(w_shape), dy, **attrs),
        rtol=1e-4,
        atol=1e-3,
    )


POOL_CASES = [
    ((2, 8, 8, 3), [1, 2, 2, 1], [1, 2, 2, 1], "VALID"),
    ((2, 8, 8, 3), [1, 2, 2, 1], [1, 2, 2, 1], "SAME"),
    ((1, 9, 9, 2), [1, 3, 3, 1], [1, 3, 3, 1], "VALID"),
    ((1, 7, 7, 2), [1, 2, 2, 1], [1, 2, 2, 1], "SAME"),  # not tiled: falls back
    ((1, 8, 8, 2), [1, 3, 3, 1], [1, 1, 1, 1], "SAME"),  # overlapping: falls back
]


@pytest.mark.parametrize("shape, ksize, strides, padding", POOL_CASES)
def test_reshape_max_pool_and_its_gradient_equal_the_generic_kernels(
    shape, ksize, strides, padding
):
    attrs = {"ksize": ksize, "strides": strides, "padding": padding, "data_format": "NHWC"}
    x = RNG.normal(size=shape).astype(np.float32)
    x[0, 0, 0, 0] = x[0, 0, 1, 0] = 5.0  # a tie: both kernels route to the first maximum
    generic, cpu = both("MaxPool")
    y = np.asarray(generic(x, **attrs))
    np.testing.assert_array_equal(cpu(x, **attrs), y)
    dy = RNG.normal(size=y.shape).astype(np.float32)
    generic, cpu = both("MaxPoolGrad")
    np.testing.assert_allclose(cpu(x, y, dy, **attrs), generic(x, y, dy, **attrs), rtol=1e-6)


def test_cpu_kernels_are_chosen_on_a_cpu():
    assert registry.default_device_type() == "cpu"
    assert registry.get_kernel("Conv2D", "cpu") is not registry.get_kernel("Conv2D")
