"""The 3-D convolution and pooling ops (`conv3d_ops`, `pool3d_ops`): forward values against
NumPy loops of TF's definitions ("SAME"/"VALID", strides, dilations, NDHWC and NCDHW), shape
inference with unknown dimensions, TF's argument errors, and the gradients of every op (the
backprops and pooling gradient ops included) against float64 central differences."""

import itertools
import re

import numpy as np
import pytest

import sluice as sl
from sluice.framework.ir import registry
from sluice.framework.ops.core.core_ops import apply_op
from sluice.framework.ops.nn import conv3d_ops, pool3d_ops
from sluice.testing import check_gradients

RNG = np.random.default_rng(7)


def randn(*shape):
    return RNG.standard_normal(shape)


def distinct(*shape):
    """Well separated values: no ties for max pooling."""
    return RNG.permutation(np.prod(shape)).reshape(shape) * 0.1 + randn(*shape) * 0.01


def same_pads(size, k, stride):
    total = max((-(-size // stride) - 1) * stride + k - size, 0)
    return total // 2, total - total // 2


def np_conv3d(x, w, strides, padding, dilations):
    """TF's Conv3D, NDHWC: out[n, o] = sum over taps of x[n, o * s + t * d - before] @ w[t]."""
    ks = [(k - 1) * d + 1 for k, d in zip(w.shape[:3], dilations)]
    pads = [same_pads(n, k, s) if padding == "SAME" else (0, 0)
            for n, k, s in zip(x.shape[1:4], ks, strides)]  # fmt: skip
    xp = np.pad(x, [(0, 0), *pads, (0, 0)])
    out_sizes = [(n - k) // s + 1 for n, k, s in zip(xp.shape[1:4], ks, strides)]
    y = np.zeros((x.shape[0], *out_sizes, w.shape[4]))
    for o in itertools.product(*map(range, out_sizes)):
        for t in itertools.product(*map(range, w.shape[:3])):
            at = tuple(i * s + j * d for i, j, s, d in zip(o, t, strides, dilations))
            y[(slice(None), *o)] += xp[(slice(None), *at)] @ w[t]
    return y


def np_pool3d(x, ksize, strides, padding, kind):
    """TF's MaxPool3D / AvgPool3D, NDHWC; the average counts only elements inside the input."""
    pads = [same_pads(n, k, s) if padding == "SAME" else (0, 0)
            for n, k, s in zip(x.shape[1:4], ksize, strides)]  # fmt: skip
    xp = np.pad(x, [(0, 0), *pads, (0, 0)], constant_values=np.nan)
    out_sizes = [(n - k) // s + 1 for n, k, s in zip(xp.shape[1:4], ksize, strides)]
    y = np.zeros((x.shape[0], *out_sizes, x.shape[4]))
    for o in itertools.product(*map(range, out_sizes)):
        window = xp[(slice(None),) + tuple(slice(i * s, i * s + k)
                                          for i, s, k in zip(o, strides, ksize))]  # fmt: skip
        reduce = np.nanmax if kind == "max" else np.nanmean
        y[(slice(None), *o)] = reduce(window, axis=(1, 2, 3))
    return y


def run(tensor, feed=None):
    with sl.Session() as sess:
        return sess.run(tensor, feed)


def to_first(a):
    return np.moveaxis(a, -1, 1)


@pytest.mark.parametrize(
    "x_shape, w_shape, strides, padding, dilations",
    [
        ((2, 4, 5, 3, 2), (2, 3, 2, 2, 3), (1, 1, 1), "VALID", (1, 1, 1)),
        ((1, 5, 4, 5, 2), (3, 2, 3, 2, 2), (2, 1, 2), "SAME", (1, 1, 1)),
        ((1, 5, 5, 4, 1), (2, 2, 2, 1, 2), (1, 1, 1), "SAME", (2, 1, 2)),
        ((1, 6, 5, 5, 2), (2, 2, 3, 2, 1), (3, 2, 2), "VALID", (1, 1, 1)),
    ],
)
def test_conv3d_matches_numpy_in_both_layouts(x_shape, w_shape, strides, padding, dilations):
    x, w = randn(*x_shape), randn(*w_shape)
    expected = np_conv3d(x, w, strides, padding, dilations)
    with sl.Graph().as_default():
        last = conv3d_ops.conv3d(x, w, strides, padding, dilations=dilations)
        first = conv3d_ops.conv3d(
            to_first(x), w, strides, padding, data_format="NCDHW", dilations=dilations
        )
        assert last.shape.as_list() == list(expected.shape)
        got_last, got_first = run([last, first])
    np.testing.assert_allclose(got_last, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_first, to_first(expected), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "fn, kind, ksize, strides, padding",
    [
        (pool3d_ops.max_pool3d, "max", (2, 2, 2), (2, 2, 2), "VALID"),
        (pool3d_ops.max_pool3d, "max", (3, 2, 3), (2, 1, 2), "SAME"),
        (pool3d_ops.avg_pool3d, "avg", (2, 2, 2), (2, 2, 2), "VALID"),
        (pool3d_ops.avg_pool3d, "avg", (3, 2, 3), (2, 1, 2), "SAME"),
    ],
)
def test_pool3d_matches_numpy_in_both_layouts(fn, kind, ksize, strides, padding):
    x = randn(2, 5, 4, 5, 3)
    expected = np_pool3d(x, ksize, strides, padding, kind)
    with sl.Graph().as_default():
        last = fn(x, list(ksize), list(strides), padding)
        first = fn(to_first(x), [1, 1, *ksize], [1, 1, *strides], padding, data_format="NCDHW")
        assert last.shape.as_list() == list(expected.shape)
        got_last, got_first = run([last, first])
    np.testing.assert_allclose(got_last, expected, rtol=1e-12)
    np.testing.assert_allclose(got_first, to_first(expected), rtol=1e-12)


def test_shapes_are_inferred_with_unknown_dims():
    with sl.Graph().as_default():
        x = sl.placeholder(sl.float32, [None, 8, None, 6, 3])
        y = conv3d_ops.conv3d(x, sl.ones([3, 3, 3, 3, 4]), [1, 2, 2, 2, 1], "SAME")
        assert y.shape.as_list() == [None, 4, None, 3, 4]
        p = pool3d_ops.max_pool3d(x, 2, 2, "VALID")
        assert p.shape.as_list() == [None, 4, None, 3, 3]
        xf = sl.placeholder(sl.float32, [None, 3, 5, 5, None])
        assert pool3d_ops.avg_pool3d(xf, 2, 2, "SAME", "NCDHW").shape.as_list() == [
            None, 3, 3, 3, None
        ]  # fmt: skip
        sizes = sl.shape(sl.placeholder(sl.float32, [None, 5, 5, 5, 2]))
        dy = sl.placeholder(sl.float32, [None, 3, 3, 3, 4])
        dx = conv3d_ops.conv3d_transpose(dy, sl.ones([3, 3, 3, 2, 4]), sizes, 2, "SAME")
        assert dx.shape.as_list() == [None, 5, 5, 5, 2]
        dw = conv3d_ops.conv3d_backprop_filter_v2(
            sl.placeholder(sl.float32, [None, 5, 5, 5, 2]), [3, 3, 3, 2, 4], dy, 2, "SAME"
        )
        assert dw.shape.as_list() == [3, 3, 3, 2, 4]


def test_conv3d_transpose_is_the_adjoint_of_conv3d():
    x, w, dy = randn(1, 4, 5, 4, 2), randn(2, 3, 2, 2, 3), randn(1, 2, 3, 2, 3)
    with sl.Graph().as_default():
        y = conv3d_ops.conv3d(x, w, 2, "SAME")
        dx = conv3d_ops.conv3d_transpose(dy, w, list(x.shape), 2, "SAME")
        y_value, dx_value = run([y, dx])
    # <conv(x), dy> == <x, conv^T(dy)>
    np.testing.assert_allclose(np.sum(y_value * dy), np.sum(x * dx_value), rtol=1e-10)


@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda: conv3d_ops.conv3d(sl.ones([1, 4, 4, 4, 2]), sl.ones([2, 2, 2, 3, 1]), 1,
                                   "VALID"), ValueError, "3 channels? but the filter|expects 3"),
        (lambda: conv3d_ops.conv3d(sl.ones([1, 4, 4, 2]), sl.ones([2, 2, 2, 2, 1]), 1, "VALID"),
         ValueError, "rank 5"),
        (lambda: conv3d_ops.conv3d(sl.ones([1, 4, 4, 4, 2]), sl.ones([2, 2, 2, 2, 1]),
                                   [2, 1, 1, 1, 1], "VALID"), ValueError, "batch and channel"),
        (lambda: conv3d_ops.conv3d(sl.ones([1, 4, 4, 4, 2]), sl.ones([2, 2, 2, 2, 1]), 1,
                                   "FULL"), ValueError, "'SAME' or 'VALID'"),
        (lambda: conv3d_ops.conv3d(sl.ones([1, 2, 4, 4, 2]), sl.ones([3, 2, 2, 2, 1]), 1,
                                   "VALID"), ValueError, "Negative dimension size"),
        (lambda: pool3d_ops.max_pool3d(sl.ones([1, 4, 4, 4, 2]), [2, 2], 1, "VALID"),
         ValueError, "1, 3 or 5 ints"),
        (lambda: pool3d_ops.avg_pool3d(sl.ones([1, 4, 4, 4, 2]), 2, 1, "VALID", "NHWC"),
         ValueError, "'NDHWC' or 'NCDHW'"),
        (lambda: pool3d_ops.max_pool3d(sl.ones([1, 4, 4, 4], dtype=sl.float32), 2, 1, "VALID"),
         ValueError, "rank 5"),
    ],
)  # fmt: skip
def test_errors_name_the_problem(make, error, match):
    with sl.Graph().as_default(), pytest.raises(error, match=match):
        make()


# -- gradients ----------------------------------------------------------------------------------
X, W = randn(1, 3, 4, 3, 2), randn(2, 2, 2, 2, 2)
DY = randn(1, 2, 2, 2, 2)  # conv3d(X, W, 2, "SAME")'s shape
POOL_X = distinct(1, 3, 4, 3, 2)
POOL_ATTRS = {"ksize": [1, 2, 2, 2, 1], "strides": [1, 1, 2, 1, 1], "padding": "SAME",
              "data_format": "NDHWC"}  # fmt: skip


def unknown(x):
    x = sl.convert_to_tensor(x)
    return sl.placeholder_with_default(x, [None] * x.shape.rank)


def pool_grad_op(op_type):
    def build(g):
        x = sl.constant(POOL_X)
        y = apply_op("MaxPool3D", [x], POOL_ATTRS).outputs[0]
        return apply_op(op_type, [x, y, g], POOL_ATTRS).outputs[0]

    return build


GRAD_CASES = [
    ("conv3d_same_stride2", lambda x, w: conv3d_ops.conv3d(x, w, 2, "SAME"), [X, W]),
    ("conv3d_valid_dilated", lambda x, w: conv3d_ops.conv3d(x, w, 1, "VALID",
     dilations=[1, 2, 1]), [X, W]),
    ("conv3d_ncdhw", lambda x, w: conv3d_ops.conv3d(x, w, [1, 2, 1], "SAME",
     data_format="NCDHW"), [randn(1, 2, 3, 4, 3), W]),
    ("conv3d_unknown_dims", lambda x, w: conv3d_ops.conv3d(unknown(x), w, 2, "SAME"), [X, W]),
    ("conv3d_backprop_input", lambda w, dy: conv3d_ops.conv3d_transpose(
        dy, w, [1, 3, 4, 3, 2], 2, "SAME"), [W, DY]),
    ("conv3d_backprop_filter", lambda x, dy: conv3d_ops.conv3d_backprop_filter_v2(
        x, [2, 2, 2, 2, 2], dy, 2, "SAME"), [X, DY]),
    ("max_pool3d_same", lambda x: pool3d_ops.max_pool3d(x, 2, [1, 2, 1], "SAME"), [POOL_X]),
    ("max_pool3d_ncdhw", lambda x: pool3d_ops.max_pool3d(x, 2, 1, "VALID", "NCDHW"),
     [distinct(1, 2, 3, 3, 2)]),
    ("avg_pool3d_same", lambda x: pool3d_ops.avg_pool3d(x, [2, 3, 2], 2, "SAME"), [X]),
    ("avg_pool3d_unknown_dims", lambda x: pool3d_ops.avg_pool3d(unknown(x), 2, 1, "VALID"), [X]),
    ("max_pool3d_grad", pool_grad_op("MaxPool3DGrad"), [randn(1, 3, 2, 3, 2)]),
    ("max_pool3d_grad_grad", pool_grad_op("MaxPool3DGradGrad"), [randn(1, 3, 4, 3, 2)]),
    ("avg_pool3d_grad", lambda g: apply_op("AvgPool3DGrad", [sl.constant([1, 3, 4, 3, 2]), g],
     POOL_ATTRS).outputs[0], [randn(1, 3, 2, 3, 2)]),
]  # fmt: skip


@pytest.mark.parametrize(
    "build, inputs", [c[1:] for c in GRAD_CASES], ids=[c[0] for c in GRAD_CASES]
)
def test_gradient_matches_central_differences(build, inputs):
    check_gradients(build, inputs, rtol=1e-6, atol=1e-8)


OP_TYPES = {
    conv3d_ops: ["Conv3D", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2"],
    pool3d_ops: ["MaxPool3D", "MaxPool3DGrad", "MaxPool3DGradGrad", "AvgPool3D", "AvgPool3DGrad"],
}


@pytest.mark.parametrize("module", OP_TYPES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_every_op_has_a_gradient(module):
    with open(module.__file__) as f:
        registered = re.findall(r'register_op\(\s*"(\w+)"', f.read())
    assert registered == OP_TYPES[module]
    assert all(callable(registry.get_gradient(name)) for name in registered)
