"""TF1 math ops that published programs call (issue 16): clipping, reductions, float classes,
division variants, casts, trigonometric and special functions.

As TF 1.x's own op tests: values against NumPy references at 1e-6, in both engines (one graph of
all value cases, run once per engine); the error types TF raises at graph construction; the
gradients against float64 central differences (one compact table, both engines).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import sluice as sl
from sluice.framework.autodiff.gradients import gradients
from tests.framework.ops.value_tables import ENGINES as VALUE_ENGINES
from tests.framework.ops.value_tables import (
    check_gradient_case,
    check_value,
    gradient_table_runner,
    value_table_runner,
)

ENGINES = ["compiled", "interpreted"]
RNG = np.random.default_rng(16)
X = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -6.0]])
Y = np.array([[2.0, 0.0, -4.0], [1.5, -3.0, 0.0]])
UNIT = np.array([-0.9, -0.3, 0.2, 0.7])
BIG = np.array([1.5, 2.0, 3.5])


def _np_lse(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def _np_clip_by_norm(t, c, axes=None):
    norm = np.sqrt(np.sum(t * t, axis=axes, keepdims=True))
    return t * c / np.maximum(norm, c)


def _np_cumprod(x, axis, exclusive=False, reverse=False):
    if reverse:
        x = np.flip(x, axis)
    out = np.cumprod(x, axis)
    if exclusive:
        out = np.concatenate(
            [np.ones_like(np.take(out, [0], axis)), np.take(out, range(x.shape[axis] - 1), axis)],
            axis,
        )
    return np.flip(out, axis) if reverse else out


_lgamma = np.vectorize(math.lgamma)
_erfc = np.vectorize(math.erfc)

# name: (build the tensor, NumPy reference)
VALUES = {
    "clip_by_value": (lambda x: sl.clip_by_value(x, -1.0, 2.0), lambda x: np.clip(x, -1, 2)),
    "clip_by_value_tensor_bounds": (
        lambda x: sl.clip_by_value(x, np.array([-1.0, 0.0, 1.0]), 2.5),
        lambda x: np.minimum(np.maximum(x, [-1.0, 0.0, 1.0]), 2.5),
    ),
    "clip_by_norm_all": (lambda x: sl.clip_by_norm(x, 2.0), lambda x: _np_clip_by_norm(x, 2.0)),
    "clip_by_norm_axes": (
        lambda x: sl.clip_by_norm(x, 4.0, axes=[1]),
        lambda x: _np_clip_by_norm(x, 4.0, 1),
    ),
    "clip_by_norm_unclipped": (lambda x: sl.clip_by_norm(x, 100.0), lambda x: x),
    "clip_by_norm_zeros": (lambda x: sl.clip_by_norm(np.zeros(3), 1.0), lambda x: np.zeros(3)),
    "clip_by_average_norm": (
        lambda x: sl.clip_by_average_norm(x, 0.5),
        lambda x: x * 0.5 / max(np.sqrt(np.sum(x * x)) / x.size, 0.5),
    ),
    "reduce_logsumexp": (lambda x: sl.reduce_logsumexp(x), lambda x: _np_lse(x)),
    "reduce_logsumexp_axis_keep": (
        lambda x: sl.reduce_logsumexp(x, axis=1, keepdims=True),
        lambda x: _np_lse(x, 1, True),
    ),
    "reduce_logsumexp_large": (
        lambda x: sl.reduce_logsumexp([1000.0, 1000.0]),
        lambda x: np.float32(1000 + np.log(2)),
    ),
    "reduce_logsumexp_inf": (
        lambda x: sl.reduce_logsumexp([-np.inf, -np.inf]),
        lambda x: np.float32(-np.inf),
    ),
    "count_nonzero": (lambda x: sl.count_nonzero(Y), lambda x: np.int64(np.count_nonzero(Y))),
    "count_nonzero_axis": (
        lambda x: sl.count_nonzero(Y, axis=0, keepdims=True, dtype=sl.int32),
        lambda x: np.count_nonzero(Y, axis=0, keepdims=True).astype(np.int32),
    ),
    "count_nonzero_bool": (lambda x: sl.count_nonzero([True, False, True]), lambda x: np.int64(2)),
    "is_nan": (
        lambda x: sl.is_nan([1.0, np.nan, np.inf]),
        lambda x: np.array([False, True, False]),
    ),
    "is_inf": (
        lambda x: sl.is_inf([1.0, np.nan, -np.inf]),
        lambda x: np.array([False, False, True]),
    ),
    "is_finite": (
        lambda x: sl.is_finite([1.0, np.nan, np.inf]),
        lambda x: np.array([True, False, False]),
    ),
    "cumprod": (lambda x: sl.cumprod(x, axis=1), lambda x: np.cumprod(x, 1)),
    "cumprod_exclusive": (
        lambda x: sl.cumprod(x, 1, exclusive=True),
        lambda x: _np_cumprod(x, 1, exclusive=True),
    ),
    "cumprod_reverse": (
        lambda x: sl.cumprod(x, 0, reverse=True),
        lambda x: _np_cumprod(x, 0, reverse=True),
    ),
    "cumprod_exclusive_reverse": (
        lambda x: sl.cumprod(x, -1, exclusive=True, reverse=True),
        lambda x: _np_cumprod(x, 1, True, True),
    ),
    "div_no_nan": (
        lambda x: sl.div_no_nan(x, Y),
        lambda x: np.where(Y == 0, 0.0, x / np.where(Y == 0, 1.0, Y)),
    ),
    "div_no_nan_zero_over_zero": (lambda x: sl.div_no_nan(0.0, 0.0), lambda x: np.float32(0)),
    "scalar_mul": (lambda x: sl.scalar_mul(2.5, x), lambda x: 2.5 * x),
    "saturate_cast_uint8": (
        lambda x: sl.saturate_cast([-5.0, 7.9, 300.0], sl.uint8),
        lambda x: np.array([0, 7, 255], np.uint8),
    ),
    "saturate_cast_int8": (
        lambda x: sl.saturate_cast(np.array([-1000, 5, 1000]), sl.int8),
        lambda x: np.array([-128, 5, 127], np.int8),
    ),
    "saturate_cast_widen": (
        lambda x: sl.saturate_cast(np.array([1, -2], np.int32), sl.int64),
        lambda x: np.array([1, -2], np.int64),
    ),
    "to_bfloat16": (
        lambda x: sl.cast(sl.to_bfloat16([1.5, 3.0]), sl.float32),
        lambda x: np.float32([1.5, 3.0]),
    ),
    "truncatediv": (
        lambda x: sl.truncatediv([-7, 7, -7, 7, 6], [2, 2, -2, -2, 3]),
        lambda x: np.array([-3, 3, 3, -3, 2], np.int32),
    ),
    "truncatemod_int": (
        lambda x: sl.truncatemod([-7, 7, -7, 7], [2, 2, -2, -2]),
        lambda x: np.fmod([-7, 7, -7, 7], [2, 2, -2, -2]).astype(np.int32),
    ),
    "truncatemod_float": (lambda x: sl.truncatemod(x, 1.5), lambda x: np.fmod(x, 1.5)),
    "floor_div": (lambda x: sl.floor_div([-7, 7], [2, 2]), lambda x: np.array([-4, 3], np.int32)),
    "log_sigmoid": (
        lambda x: sl.log_sigmoid(np.array([-100.0, 0.0, 3.0, 100.0])),
        lambda x: -np.logaddexp(0, -np.array([-100.0, 0.0, 3.0, 100.0])),
    ),
    "verify_tensor_all_finite": (lambda x: sl.verify_tensor_all_finite(x, "bad"), lambda x: x),
    "asin": (lambda x: sl.asin(UNIT), lambda x: np.arcsin(UNIT)),
    "acos": (lambda x: sl.acos(UNIT), lambda x: np.arccos(UNIT)),
    "atan": (lambda x: sl.atan(x), lambda x: np.arctan(x)),
    "sinh": (lambda x: sl.sinh(x), lambda x: np.sinh(x)),
    "cosh": (lambda x: sl.cosh(x), lambda x: np.cosh(x)),
    "asinh": (lambda x: sl.asinh(x), lambda x: np.arcsinh(x)),
    "acosh": (lambda x: sl.acosh(BIG), lambda x: np.arccosh(BIG)),
    "atanh": (lambda x: sl.atanh(UNIT), lambda x: np.arctanh(UNIT)),
    "atan2": (lambda x: sl.atan2(x, Y), lambda x: np.arctan2(x, Y)),
    "lgamma": (lambda x: sl.lgamma(BIG), lambda x: _lgamma(BIG)),
    "digamma": (
        lambda x: sl.digamma(np.array([1.0, 2.0])),
        lambda x: np.array([-0.5772156649015329, 0.42278433509846713]),
    ),
    "erfc": (lambda x: sl.erfc(x), lambda x: _erfc(x)),
    "polygamma": (
        lambda x: sl.polygamma(np.array([1.0, 2.0]), np.array([1.0, 1.0])),
        lambda x: np.array([np.pi**2 / 6, -2 * 1.2020569031595942]),
    ),
    "polygamma_fractional_order_is_nan": (
        lambda x: sl.polygamma([0.5, 0.0], [1.0, 1.0]),
        lambda x: np.float32([np.nan, -0.5772157]),
    ),
    "rint": (
        lambda x: sl.rint([-1.5, -0.5, 0.5, 1.5, 2.7]),
        lambda x: np.float32([-2.0, -0.0, 0.0, 2.0, 3.0]),
    ),
}


@pytest.fixture(scope="module")
def computed():
    return value_table_runner(VALUES, X)


@pytest.mark.parametrize("engine", VALUE_ENGINES)
@pytest.mark.parametrize("name", sorted(VALUES))
def test_values_match_numpy(computed, name, engine):
    check_value(computed(engine)[name], VALUES[name][1](X))


def test_dtypes_and_static_shapes():
    x = sl.placeholder(sl.float32, [None, 3])
    assert sl.clip_by_value(x, 0.0, 1.0).shape.as_list() == [None, 3]
    assert sl.reduce_logsumexp(x, axis=1).shape.as_list() == [None]
    assert sl.count_nonzero(x, axis=0).dtype == sl.int64
    assert sl.is_nan(x).dtype == sl.bool and sl.is_nan(x).shape.as_list() == [None, 3]
    assert sl.cumprod(x, axis=1).shape.as_list() == [None, 3]
    assert sl.saturate_cast(x, sl.uint8).dtype == sl.uint8
    assert sl.to_bfloat16(x).dtype == sl.bfloat16
    assert sl.atan2(x, x).dtype == sl.float32


def test_clip_by_value_keeps_indexed_slices():
    values = sl.constant([[5.0, -5.0]])
    slices = sl.IndexedSlices(values, sl.constant([2]), sl.constant([4, 2]))
    clipped = sl.clip_by_value(slices, -1.0, 1.0)
    assert isinstance(clipped, sl.IndexedSlices)
    np.testing.assert_array_equal(sl.Session().run(clipped.values), [[1.0, -1.0]])


@pytest.mark.parametrize("engine", ENGINES)
def test_verify_tensor_all_finite_raises_when_run(engine):
    x = sl.placeholder(sl.float32, [2])
    checked = sl.verify_tensor_all_finite(x, "x is bad")
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        with pytest.raises(sl.errors.InvalidArgumentError, match="x is bad"):
            sess.run(checked, {x: [1.0, np.nan]})


# -- errors at graph construction, with TF's types ------------------------------------------------
ERRORS = {  # name: (build, exception type, message pattern)
    "clip_by_value_broadcasts_t": (
        lambda: sl.clip_by_value([1.0, 2.0], [[0.0], [1.0]], 3.0),
        ValueError,
        "shape",
    ),
    "clip_by_value_dtype": (
        lambda: sl.clip_by_value(sl.constant([1.0]), sl.constant([0]), 1.0),
        TypeError,
        "dtype",
    ),
    "clip_by_norm_broadcasts_t": (
        lambda: sl.clip_by_norm([1.0, 2.0], [[1.0], [2.0]]),
        ValueError,
        "shape",
    ),
    "logsumexp_axis": (lambda: sl.reduce_logsumexp(X, axis=3), ValueError, "axis"),
    "logsumexp_int": (lambda: sl.reduce_logsumexp([1, 2]), TypeError, "floating"),
    "is_nan_int": (lambda: sl.is_nan([1, 2]), TypeError, "IsNan"),
    "cumprod_axis": (lambda: sl.cumprod(X, axis=2), ValueError, "axis"),
    "cumprod_bool": (lambda: sl.cumprod([True]), TypeError, "numeric"),
    "div_no_nan_int": (lambda: sl.div_no_nan([1], [2]), TypeError, "DivNoNan"),
    "div_no_nan_shapes": (
        lambda: sl.div_no_nan([1.0, 2.0], [1.0, 2.0, 3.0]),
        ValueError,
        "broadcast",
    ),
    "truncatediv_float": (lambda: sl.truncatediv([1.0], [2.0]), TypeError, "integer"),
    "truncatemod_dtypes": (
        lambda: sl.truncatemod(sl.constant([1]), sl.constant([1.0])),
        TypeError,
        "dtype",
    ),
    "scalar_mul_vector": (lambda: sl.scalar_mul([1.0, 2.0], X), ValueError, "scalar"),
    "atan2_int": (lambda: sl.atan2([1], [1]), TypeError, "floating"),
    "acos_int": (lambda: sl.acos([1]), TypeError, "floating"),
    "lgamma_int": (lambda: sl.lgamma([1]), TypeError, "floating"),
    "rint_int": (lambda: sl.rint([1]), TypeError, "floating"),
    "polygamma_int": (lambda: sl.polygamma([1], [2]), TypeError, "floating"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_at_graph_construction(name):
    build, error, pattern = ERRORS[name]
    with pytest.raises(error, match=pattern):
        build()


# -- gradients ------------------------------------------------------------------------------------
def _values(shape, low=-2.0, high=2.0):
    return RNG.uniform(low, high, shape)


GRADIENTS = {  # name: (build from placeholders, inputs)
    "clip_by_value": (lambda x: sl.clip_by_value(x, -0.5, 0.5), [np.array([-1.0, -0.2, 0.3, 1.2])]),
    "clip_by_value_bounds": (
        lambda x, lo, hi: sl.clip_by_value(x, lo, hi),
        [np.array([-1.0, 0.2, 1.5]), np.array([-0.5, -0.5, -0.5]), np.array([1.0, 1.0, 1.0])],
    ),
    "clip_by_norm": (lambda x: sl.clip_by_norm(x, 1.0, axes=[1]), [_values((2, 3))]),
    "clip_by_average_norm": (lambda x: sl.clip_by_average_norm(x, 0.1), [_values((2, 2))]),
    "reduce_logsumexp": (lambda x: sl.reduce_logsumexp(x, axis=0), [_values((3, 2))]),
    "cumprod": (lambda x: sl.cumprod(x, axis=1), [_values((2, 3), 0.5, 2.0)]),
    "cumprod_exclusive_reverse": (
        lambda x: sl.cumprod(x, 0, exclusive=True, reverse=True),
        [_values((3, 2), 0.5, 2.0)],
    ),
    "div_no_nan": (lambda x, y: sl.div_no_nan(x, y), [_values((2, 3)), _values((3,), 0.5, 2.0)]),
    "scalar_mul": (lambda s, x: sl.scalar_mul(s, x), [np.array(1.5), _values((3,))]),
    "log_sigmoid": (sl.log_sigmoid, [_values((4,), -5, 5)]),
    "asin": (sl.asin, [UNIT]),
    "acos": (sl.acos, [UNIT]),
    "atan": (sl.atan, [_values((3,))]),
    "sinh": (sl.sinh, [_values((3,))]),
    "cosh": (sl.cosh, [_values((3,))]),
    "asinh": (sl.asinh, [_values((3,))]),
    "acosh": (sl.acosh, [BIG]),
    "atanh": (sl.atanh, [UNIT]),
    "atan2_broadcast": (sl.atan2, [_values((2, 3)), _values((3,), 0.5, 2.0)]),
    "lgamma": (sl.lgamma, [BIG]),
    "digamma": (sl.digamma, [BIG]),
    "polygamma": (lambda x: sl.polygamma(np.float64(2.0), x), [BIG]),
    "erfc": (sl.erfc, [_values((3,))]),
}


@pytest.fixture(scope="module")
def gradient_results():
    return gradient_table_runner(GRADIENTS)


@pytest.mark.parametrize("engine", VALUE_ENGINES)
@pytest.mark.parametrize("name", sorted(GRADIENTS))
def test_gradients_match_central_differences(gradient_results, name, engine):
    check_gradient_case(gradient_results(engine)[name])


@pytest.mark.parametrize("engine", ENGINES)
def test_special_gradients(engine):
    """What differences cannot show: div_no_nan's zero gradient where y = 0, no gradient for
    the float classes, truncated division and rint (None, as TF1's missing gradient)."""
    x, y = sl.constant([1.0, 2.0]), sl.constant([0.0, 4.0])
    dx, dy = gradients(sl.reduce_sum(sl.div_no_nan(x, y)), [x, y])
    zero_norm = sl.constant([0.0, 0.0])
    (dz,) = gradients(sl.reduce_sum(sl.clip_by_norm(zero_norm, 1.0)), [zero_norm])
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        gx, gy, gz = sess.run([dx, dy, dz])
    np.testing.assert_array_equal(gx, [0.0, 0.25])
    np.testing.assert_array_equal(gy, [0.0, -2.0 / 16])
    assert np.isfinite(gz).all()
    assert gradients(sl.reduce_sum(sl.rint(x)), [x]) == [None]
    assert gradients(sl.reduce_sum(sl.truncatemod(x, 1.5)), [x]) == [None]
