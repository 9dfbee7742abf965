"""Conv2D, MaxPool and AvgPool against small NumPy implementations of TF's semantics."""

import numpy as np
import pytest

import sluice as sl
from sluice.framework.ops.nn import conv_ops, pool_ops

RNG = np.random.default_rng(1)
TOL = {np.float32: (2e-5, 2e-5), np.float64: (1e-12, 1e-12)}


# -- NumPy references (NHWC) --------------------------------------------------------------------
def np_pads(size, k, stride, dilation, padding):
    """TF's (before, after) padding of one spatial dimension."""
    if isinstance(padding, (list, tuple)):
        return tuple(padding)
    if padding == "VALID":
        return 0, 0
    effective_k = (k - 1) * dilation + 1
    total = max((-(-size // stride) - 1) * stride + effective_k - size, 0)
    return total // 2, total - total // 2


def np_conv2d(x, w, strides, padding, dilations=(1, 1)):
    """padding: "SAME", "VALID" or ((top, bottom), (left, right))."""
    kh, kw = w.shape[:2]
    per_dim = [padding] * 2 if isinstance(padding, str) else padding
    pads = [
        np_pads(x.shape[1 + i], w.shape[i], strides[i], dilations[i], per_dim[i]) for i in (0, 1)
    ]
    xp = np.pad(x, [(0, 0), pads[0], pads[1], (0, 0)])
    out_h = (xp.shape[1] - ((kh - 1) * dilations[0] + 1)) // strides[0] + 1
    out_w = (xp.shape[2] - ((kw - 1) * dilations[1] + 1)) // strides[1] + 1
    out = np.zeros((x.shape[0], out_h, out_w, w.shape[3]))
    for i in range(kh):
        for j in range(kw):
            top, left = i * dilations[0], j * dilations[1]
            patch = xp[
                :,
                top : top + (out_h - 1) * strides[0] + 1 : strides[0],
                left : left + (out_w - 1) * strides[1] + 1 : strides[1],
                :,
            ]
            out += np.einsum("nhwc,co->nhwo", patch, w[i, j])
    return out


def np_pool(x, ksize, strides, padding, kind):
    """Max or average pooling; padded positions never win a max and never count in a mean."""
    pads = [np_pads(x.shape[1 + i], ksize[i], strides[i], 1, padding) for i in range(2)]
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, [(0, 0), pads[0], pads[1], (0, 0)], constant_values=fill)
    inside = np.pad(np.ones_like(x), [(0, 0), pads[0], pads[1], (0, 0)])
    out_h = (xp.shape[1] - ksize[0]) // strides[0] + 1
    out_w = (xp.shape[2] - ksize[1]) // strides[1] + 1
    out = np.zeros((x.shape[0], out_h, out_w, x.shape[3]))
    for i in range(out_h):
        for j in range(out_w):
            rows = slice(i * strides[0], i * strides[0] + ksize[0])
            cols = slice(j * strides[1], j * strides[1] + ksize[1])
            window, count = xp[:, rows, cols, :], inside[:, rows, cols, :].sum(axis=(1, 2))
            if kind == "max":
                out[:, i, j, :] = window.max(axis=(1, 2))
            else:
                out[:, i, j, :] = window.sum(axis=(1, 2)) / count
    return out


def nchw(x):
    return x.transpose(0, 3, 1, 2)


def nhwc(x):
    return x.transpose(0, 2, 3, 1)


def randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def spatial(value):
    """The (height, width) entries of a conv2d/pool argument: an int or a list of 1, 2 or 4."""
    value = [value] if isinstance(value, int) else list(value)
    return {1: value * 2, 2: value, 4: value[1:3]}[len(value)]


# -- the table: (id, input shape, filter shape, conv2d arguments) ------------------------------
CONV_CASES = [
    ("same-s1", (2, 5, 5, 3), (3, 3, 3, 4), {"strides": 1, "padding": "SAME"}),
    ("valid-s1", (2, 6, 5, 3), (3, 2, 3, 2), {"strides": [1, 1, 1, 1], "padding": "VALID"}),
    ("same-s2-odd", (1, 7, 8, 2), (3, 3, 2, 3), {"strides": 2, "padding": "SAME"}),
    ("same-s2x3-even-k", (1, 8, 7, 2), (4, 2, 2, 3), {"strides": [2, 3], "padding": "SAME"}),
    ("valid-s3", (2, 10, 9, 1), (3, 3, 1, 2), {"strides": [3], "padding": "VALID"}),
    ("same-dilated", (1, 9, 9, 2), (3, 3, 2, 2), {"strides": 1, "padding": "SAME", "dilations": 2}),
    (
        "valid-dilated-3x2",
        (1, 9, 8, 2),
        (3, 2, 2, 2),
        {"strides": 1, "padding": "VALID", "dilations": [1, 3, 2, 1]},
    ),
    (
        "explicit-s2",
        (1, 5, 6, 2),
        (3, 3, 2, 2),
        {"strides": 2, "padding": [[0, 0], [1, 2], [0, 3], [0, 0]]},
    ),
    ("1x1", (3, 4, 4, 5), (1, 1, 5, 2), {"strides": 1, "padding": "VALID"}),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CONV_CASES, ids=[c[0] for c in CONV_CASES])
def test_conv2d_against_numpy(case, dtype):
    _, x_shape, w_shape, kwargs = case
    padding = kwargs["padding"]
    ref_padding = padding if isinstance(padding, str) else padding[1:3]
    x, w = randn(*x_shape, dtype=dtype), randn(*w_shape, dtype=dtype)
    expected = np_conv2d(
        x.astype(np.float64),
        w.astype(np.float64),
        spatial(kwargs["strides"]),
        ref_padding,
        spatial(kwargs.get("dilations", 1)),
    )
    x_ph, w_ph = sl.placeholder(dtype, x_shape), sl.placeholder(dtype, w_shape)
    y = conv_ops.conv2d(x_ph, w_ph, **kwargs)
    unknown = conv_ops.conv2d(sl.placeholder(dtype, [None] * 4), w_ph, **kwargs)
    with sl.Session() as s:
        got, got_unknown = s.run([y, unknown], {x_ph: x, w_ph: w, unknown.op.inputs[0]: x})
    assert y.dtype == got.dtype == dtype
    assert y.shape.as_list() == list(got.shape)
    assert unknown.shape.as_list() == [None, None, None, w_shape[3]]
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
    np.testing.assert_array_equal(got_unknown, got)


def test_conv2d_nchw_equals_nhwc():
    x, w = randn(2, 7, 6, 3, dtype=np.float64), randn(3, 3, 3, 4, dtype=np.float64)
    y = conv_ops.conv2d(
        nchw(x), filters=w, strides=[1, 1, 2, 1], padding="SAME", data_format="NCHW"
    )
    assert y.shape == [2, 4, 4, 6]  # N, C, ceil(7 / 2), 6
    with sl.Session() as s:
        got = s.run(y)
    np.testing.assert_allclose(nhwc(got), np_conv2d(x, w, (2, 1), "SAME"), rtol=1e-12)


POOL_CASES = [  # (id, input shape, ksize, strides, padding)
    ("2x2-s2-valid", (2, 6, 6, 3), 2, 2, "VALID"),
    ("2x2-s2-same-odd", (2, 5, 7, 3), [2, 2], [2, 2], "SAME"),
    ("3x3-s2-same", (1, 7, 6, 2), [1, 3, 3, 1], [1, 2, 2, 1], "SAME"),
    ("3x3-s1-same", (1, 5, 5, 2), 3, 1, "SAME"),
    ("3x2-s2x1-valid", (2, 7, 5, 1), [3, 2], [2, 1], "VALID"),
    ("global", (3, 4, 4, 5), 4, 4, "VALID"),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("case", POOL_CASES, ids=[c[0] for c in POOL_CASES])
def test_pool_against_numpy(case, kind, dtype):
    _, shape, ksize, strides, padding = case
    x = randn(*shape, dtype=dtype)
    expected = np_pool(x.astype(np.float64), spatial(ksize), spatial(strides), padding, kind)
    pool = pool_ops.max_pool if kind == "max" else pool_ops.avg_pool
    ph = sl.placeholder(dtype, shape)
    y = pool(ph, ksize, strides, padding)
    unknown = pool(sl.placeholder(dtype, [None, None, None, shape[3]]), ksize, strides, padding)
    with sl.Session() as s:
        got, got_unknown = s.run([y, unknown], {ph: x, unknown.op.inputs[0]: x})
    assert y.dtype == got.dtype == dtype
    assert y.shape.as_list() == list(got.shape)
    assert unknown.shape.as_list() == [None, None, None, shape[3]]
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
    np.testing.assert_array_equal(got_unknown, got)


def test_pool_aliases_nchw_and_int_max_pool():
    x = randn(2, 5, 5, 3, dtype=np.float64)
    y = pool_ops.avg_pool2d(nchw(x), [1, 1, 3, 3], [1, 1, 2, 2], "SAME", data_format="NCHW")
    ints = pool_ops.max_pool2d(np.arange(32, dtype=np.int32).reshape(1, 4, 4, 2) - 40, 3, 2, "SAME")
    assert y.shape == [2, 3, 3, 3] and ints.dtype == sl.int32
    with sl.Session() as s:
        got, got_ints = s.run([y, ints])
    np.testing.assert_allclose(nhwc(got), np_pool(x, (3, 3), (2, 2), "SAME", "avg"), rtol=1e-12)
    ref = np_pool(
        np.arange(32, dtype=np.float64).reshape(1, 4, 4, 2) - 40, (3, 3), (2, 2), "SAME", "max"
    )
    np.testing.assert_array_equal(got_ints, ref)


X, W = np.ones([1, 5, 5, 3], np.float32), np.ones([3, 3, 3, 2], np.float32)
CONV_ERRORS = [  # (changes to conv2d(X, W, strides=1, padding="SAME"), error, message)
    ({"filter": W[:, :, :2]}, ValueError, "3 channels but the filter"),
    ({"padding": "same"}, ValueError, "padding"),
    ({"padding": "FULL"}, ValueError, "padding"),
    ({"padding": [[1, 1], [1, 1]]}, ValueError, r"4 \[before, after\]"),
    ({"padding": [[1, 0], [1, 1], [1, 1], [0, 0]]}, ValueError, r"0, 0\] in the batch"),
    ({"strides": [2, 1, 1, 1]}, ValueError, "batch and channel"),
    ({"strides": [1, 1, 1]}, ValueError, "1, 2 or 4"),
    ({"strides": None}, ValueError, "strides"),
    ({"filter": W[0]}, ValueError, "rank 4"),
    ({"input": X[0]}, ValueError, "rank 4"),
    ({"filter": W.astype(np.float64)}, TypeError, "dtype"),
    ({"input": X.astype(np.int32), "filter": W.astype(np.int32)}, TypeError, "floating"),
    ({"filter": np.ones([7, 3, 3, 2], np.float32), "padding": "VALID"}, ValueError,
     "Negative dimension size caused by subtracting 7 from 5"),
    ({"padding": "VALID", "dilations": 3}, ValueError, "subtracting 7 from 5"),
    ({"data_format": "NWHC"}, ValueError, "data_format"),
]  # fmt: skip


@pytest.mark.parametrize("changes, error, match", CONV_ERRORS)
def test_conv2d_construction_errors(changes, error, match):
    with pytest.raises(error, match=match):
        conv_ops.conv2d(**{"input": X, "filter": W, "strides": 1, "padding": "SAME", **changes})


POOL_ERRORS = [  # (changes to max_pool / avg_pool(X, ksize=2, strides=2, padding="SAME"), ...)
    ({"ksize": 6, "padding": "VALID"}, ValueError, "Negative dimension"),
    ({"ksize": [2, 2, 2, 1]}, ValueError, "batch and channel"),
    ({"strides": [1, 1, 1, 2]}, ValueError, "batch and channel"),
    ({"padding": "EXPLICIT"}, ValueError, "padding"),
    ({"padding": [[0, 0], [1, 1], [1, 1], [0, 0]]}, ValueError, "padding"),
    ({"value": X[0]}, ValueError, "rank 4"),
    ({"data_format": "NCWH"}, ValueError, "data_format"),
]


@pytest.mark.parametrize("pool", [pool_ops.max_pool, pool_ops.avg_pool])
@pytest.mark.parametrize("changes, error, match", POOL_ERRORS)
def test_pool_construction_errors(pool, changes, error, match):
    with pytest.raises(error, match=match):
        pool(**{"value": X, "ksize": 2, "strides": 2, "padding": "SAME", **changes})


def test_avg_pool_needs_floating_input():
    with pytest.raises(TypeError, match="floating"):
        pool_ops.avg_pool(X.astype(np.int32), 2, 2, "SAME")
