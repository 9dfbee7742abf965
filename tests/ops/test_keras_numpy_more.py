"""`sl.ops` NumPy functions beyond the first set (Keras's `ops/numpy.py`): bit and float
functions, complex parts, arrays made, cut and rearranged, statistics and searches, windows;
values against NumPy, on arrays and on graph tensors, and gradients of the composed ones."""

import warnings

import numpy as np
import pytest

import sluice as sl
from tests.ops.table import check_case_gradients, check_graph, check_values

ops = sl.ops
RNG = np.random.default_rng(0)
X = RNG.normal(size=(3, 4))
Y = RNG.normal(size=(3, 4))
V = RNG.normal(size=5)
W = RNG.normal(size=3)
I = np.array([12, -7, 9])  # noqa: E741
J = np.array([8, 3, 6])
N = X.copy()
N[0, 1] = np.nan
N[2, :] = np.nan
SPECIAL = np.array([np.nan, np.inf, -np.inf, 1.0, -0.0])
Z = np.array([1 + 2j, -1 - 0.5j])

with warnings.catch_warnings():  # NumPy's references of all-NaN rows warn
    warnings.simplefilter("ignore")
    NAN_REFERENCES = {
        "nanmean": np.nanmean(N, 0),
        "nanvar": np.nanvar(N, 1),
        "nanmax": np.nanmax(N, 1),
        "nanmedian": np.nanmedian(N, 1),
        "nanquantile": np.nanquantile(N, 0.3, 1),
    }

CASES = [
    ("bitwise_and", ops.bitwise_and, (I, J), {}, I & J),
    ("bitwise_or", ops.bitwise_or, (I, J), {}, I | J),
    ("bitwise_xor", ops.bitwise_xor, (I, 5), {}, I ^ 5),
    ("bitwise_not", ops.bitwise_not, (I,), {}, ~I),
    ("left_shift", ops.left_shift, (I, 2), {}, I << 2),
    ("right_shift", ops.bitwise_right_shift, (I, J % 3), {}, I >> (J % 3)),
    ("gcd", ops.gcd, (I, J), {}, np.gcd(I, J)),
    ("lcm", ops.lcm, (I, J), {}, np.lcm(I, J)),
    ("signbit", ops.signbit, (SPECIAL[1:],), {}, np.signbit(SPECIAL[1:])),
    ("copysign", ops.copysign, (X, Y), {}, np.copysign(X, Y)),
    ("hypot", ops.hypot, (X, Y), {}, np.hypot(X, Y)),
    ("heaviside", ops.heaviside, (np.array([-1.0, 0.0, 2.0]), 0.5), {},
     np.heaviside([-1.0, 0.0, 2.0], 0.5)),
    ("ldexp", ops.ldexp, (X[0], np.array([1, 2, 3, -1])), {}, np.ldexp(X[0], [1, 2, 3, -1])),
    ("trunc", ops.trunc, (X * 3,), {}, np.trunc(X * 3)),
    ("exp2", ops.exp2, (X,), {}, np.exp2(X)),
    ("deg2rad", ops.deg2rad, (X,), {}, np.deg2rad(X)),
    ("rad2deg", ops.rad2deg, (X,), {}, np.rad2deg(X)),
    ("logaddexp", ops.logaddexp, (X, Y), {}, np.logaddexp(X, Y)),
    ("logaddexp2", ops.logaddexp2, (X, Y), {}, np.logaddexp2(X, Y)),
    ("cbrt", ops.cbrt, (X,), {}, np.cbrt(X)),
    ("fabs", ops.fabs, (I,), {}, np.fabs(I).astype(np.float32)),
    ("fmax", ops.fmax, (SPECIAL, np.array([2.0, np.nan, 0.0, np.nan, 1.0])), {},
     np.fmax(SPECIAL, [2.0, np.nan, 0.0, np.nan, 1.0])),
    ("fmin", ops.fmin, (X, Y), {}, np.fmin(X, Y)),
    ("fmod", ops.fmod, (X * 3, 1.5), {}, np.fmod(X * 3, 1.5)),
    ("sinc", ops.sinc, (np.array([0.0, 0.5, 1.3]),), {}, np.sinc([0.0, 0.5, 1.3])),
    ("i0", ops.i0, (X,), {}, np.i0(X)),
    ("nextafter", ops.nextafter, (X, Y), {}, np.nextafter(X, Y)),
    ("divide_no_nan", ops.divide_no_nan, (X[0], np.array([0.0, 1.0, 2.0, 0.0])), {},
     np.array([0.0, X[0, 1], X[0, 2] / 2, 0.0])),
    ("nan_to_num", ops.nan_to_num, (SPECIAL,), {"posinf": 7.0}, np.nan_to_num(SPECIAL, posinf=7)),
    ("isneginf", ops.isneginf, (SPECIAL,), {}, np.isneginf(SPECIAL)),
    ("isposinf", ops.isposinf, (SPECIAL,), {}, np.isposinf(SPECIAL)),
    ("isclose", ops.isclose, (X, X + np.where(X > 0, 1e-9, 1e-3)), {},
     np.isclose(X, X + np.where(X > 0, 1e-9, 1e-3))),
    ("isclose_nan", ops.isclose, (SPECIAL, SPECIAL), {"equal_nan": True},
     np.isclose(SPECIAL, SPECIAL, equal_nan=True)),
    ("allclose", ops.allclose, (X, X + 1e-9), {}, True),
    ("isin", ops.isin, (I, J[:2]), {}, np.isin(I, J[:2])),
    ("isin_invert", ops.isin, (X > 0, [True]), {"invert": True}, ~(X > 0)),
    ("real", ops.real, (Z,), {}, Z.real),
    ("imag", ops.imag, (Z,), {}, Z.imag),
    ("imag_of_reals", ops.imag, (X,), {}, np.zeros_like(X)),
    ("conj", ops.conj, (Z,), {}, Z.conj()),
    ("angle", ops.angle, (Z,), {}, np.angle(Z)),
    ("angle_real", ops.angle, (W,), {}, np.angle(W)),
    ("isreal", ops.isreal, (np.array([1 + 0j, 1j]),), {}, np.array([True, False])),
    ("array", ops.array, (X,), {"dtype": "float32"}, X.astype(np.float32)),
    ("copy", ops.copy, (X,), {}, X),
    ("empty", ops.empty, ((2, 3),), {}, np.zeros((2, 3))),
    ("empty_like", ops.empty_like, (I,), {}, np.zeros(3)),
    ("tri", ops.tri, (3, 4), {"k": 1}, np.tri(3, 4, 1)),
    ("logspace", ops.logspace, (0.0, 2.0, 5), {}, np.logspace(0, 2, 5)),
    ("geomspace", ops.geomspace, (1.0, 100.0, 5), {}, np.geomspace(1, 100, 5)),
    ("vander", ops.vander, (V,), {}, np.vander(V)),
    ("vander_increasing", ops.vander, (V, 3), {"increasing": True}, np.vander(V, 3, True)),
    ("meshgrid", ops.meshgrid, (V, W), {}, np.meshgrid(V, W)),
    ("meshgrid_ij", ops.meshgrid, (V, W), {"indexing": "ij"}, np.meshgrid(V, W, indexing="ij")),
    ("diagonal", ops.diagonal, (X,), {"offset": 1}, np.diagonal(X, 1)),
    ("diagonal_3d", ops.diagonal, (X[None] * V[:2, None, None],), {"axis1": 1, "axis2": 2},
     np.diagonal(X[None] * V[:2, None, None], axis1=1, axis2=2)),
    ("diag_vector", ops.diag, (W,), {"k": 1}, np.diag(W, 1)),
    ("diag_vector_below", ops.diag, (W,), {"k": -2}, np.diag(W, -2)),
    ("diag_matrix", ops.diag, (X,), {"k": -1}, np.diag(X, -1)),
    ("diagflat", ops.diagflat, (X[:1, :2],), {}, np.diagflat(X[:1, :2])),
    ("roll", ops.roll, (X, 1), {"axis": 1}, np.roll(X, 1, 1)),
    ("roll_flat", ops.roll, (X, -5), {}, np.roll(X, -5)),
    ("roll_axes", ops.roll, (X, (1, 2)), {"axis": (0, 1)}, np.roll(X, (1, 2), (0, 1))),
    ("rot90", ops.rot90, (X,), {}, np.rot90(X)),
    ("rot90_2", ops.rot90, (X, 2), {}, np.rot90(X, 2)),
    ("rot90_3", ops.rot90, (X, 3), {}, np.rot90(X, 3)),
    ("fliplr", ops.fliplr, (X,), {}, np.fliplr(X)),
    ("flipud", ops.flipud, (X,), {}, np.flipud(X)),
    ("array_split", ops.array_split, (V, 3), {}, np.array_split(V, 3)),
    ("hsplit", ops.hsplit, (X, 2), {}, np.hsplit(X, 2)),
    ("vsplit", ops.vsplit, (X, [1]), {}, np.vsplit(X, [1])),
    ("dsplit", ops.dsplit, (X[..., None] * V[:2], 2), {}, np.dsplit(X[..., None] * V[:2], 2)),
    ("dstack", ops.dstack, ([X, Y],), {}, np.dstack([X, Y])),
    ("column_stack", ops.column_stack, ([V, V],), {}, np.column_stack([V, V])),
    ("diff", ops.diff, (X,), {"n": 2}, np.diff(X, 2)),
    ("diff_axis0", ops.diff, (X,), {"axis": 0}, np.diff(X, axis=0)),
    ("select", ops.select, ([X > 0.5, X < -0.5], [X, X * 2]), {"default": -9.0},
     np.select([X > 0.5, X < -0.5], [X, X * 2], -9.0)),
    ("vdot", ops.vdot, (X, Y), {}, np.vdot(X, Y)),
    ("inner", ops.inner, (X, Y), {}, np.inner(X, Y)),
    ("kron", ops.kron, (X[:2, :2], X[:2, :3]), {}, np.kron(X[:2, :2], X[:2, :3])),
    ("kron_vectors", ops.kron, (V, W), {}, np.kron(V, W)),
    ("cross", ops.cross, (X[:, :3], Y[:, 1:]), {}, np.cross(X[:, :3], Y[:, 1:])),
    ("cross_2d", ops.cross, (X[:, :2], Y[:, 2:]), {}, X[:, 0] * Y[:, 3] - X[:, 1] * Y[:, 2]),
    ("correlate", ops.correlate, (V, W), {}, np.correlate(V, W)),
    ("correlate_full", ops.correlate, (V, W), {"mode": "full"}, np.correlate(V, W, "full")),
    ("correlate_same_swapped", ops.correlate, (W, V), {"mode": "same"},
     np.correlate(W, V, "same")),
    ("nonzero", ops.nonzero, (np.array([[0, 1], [2, 0]]),), {}, np.nonzero([[0, 1], [2, 0]])),
    ("unravel_index", ops.unravel_index, (np.array([5, 7]), (3, 4)), {},
     np.unravel_index([5, 7], (3, 4))),
    ("unique", ops.unique, (np.array([3, 1, 3, 2, 1]),),
     {"return_index": True, "return_inverse": True, "return_counts": True},
     np.unique([3, 1, 3, 2, 1], return_index=True, return_inverse=True, return_counts=True)),
    ("unique_size", ops.unique, (np.array([3, 1, 3]),), {"size": 4, "fill_value": -1},
     np.array([1, 3, -1, -1])),
    ("bartlett", ops.bartlett, (5,), {}, np.bartlett(5)),
    ("blackman", ops.blackman, (5,), {}, np.blackman(5)),
    ("hamming", ops.hamming, (6,), {}, np.hamming(6)),
    ("hanning", ops.hanning, (5,), {}, np.hanning(5)),
    ("kaiser", ops.kaiser, (6, 5.0), {}, np.kaiser(6, 5.0)),
    ("median", ops.median, (X,), {"axis": 1}, np.median(X, 1)),
    ("median_keepdims", ops.median, (X,), {"axis": 0, "keepdims": True},
     np.median(X, 0, keepdims=True)),
    ("quantile", ops.quantile, (X, [0.1, 0.5, 0.9]), {"axis": 1},
     np.quantile(X, [0.1, 0.5, 0.9], axis=1)),
    ("quantile_lower", ops.quantile, (X, 0.3), {"method": "lower"},
     np.quantile(X, 0.3, method="lower")),
    ("quantile_higher", ops.quantile, (X, 0.3), {"method": "higher", "axis": 0},
     np.quantile(X, 0.3, 0, method="higher")),
    ("quantile_midpoint", ops.quantile, (X, 0.3), {"method": "midpoint"},
     np.quantile(X, 0.3, method="midpoint")),
    ("quantile_nearest", ops.quantile, (X, 0.3), {"method": "nearest", "axis": 1},
     np.quantile(X, 0.3, 1, method="nearest")),
    ("quantile_axes", ops.quantile, (X[None], 0.4), {"axis": (0, 2), "keepdims": True},
     np.quantile(X[None], 0.4, axis=(0, 2), keepdims=True)),
    ("percentile", ops.percentile, (X, [25, 75]), {"axis": 0}, np.percentile(X, [25, 75], 0)),
    ("nanquantile", ops.nanquantile, (N, 0.3), {"axis": 1}, NAN_REFERENCES["nanquantile"]),
    ("nanmedian", ops.nanmedian, (N,), {"axis": 1}, NAN_REFERENCES["nanmedian"]),
    ("nanpercentile", ops.nanpercentile, (N, 60), {}, np.nanpercentile(N, 60)),
    ("nansum", ops.nansum, (N,), {"axis": 1}, np.nansum(N, 1)),
    ("nanprod", ops.nanprod, (N,), {}, np.nanprod(N)),
    ("nanmean", ops.nanmean, (N,), {"axis": 0}, NAN_REFERENCES["nanmean"]),
    ("nanvar", ops.nanvar, (N,), {"axis": 1}, NAN_REFERENCES["nanvar"]),
    ("nanstd", ops.nanstd, (N,), {}, np.nanstd(N)),
    ("nanmax", ops.nanmax, (N,), {"axis": 1}, NAN_REFERENCES["nanmax"]),
    ("nanmin", ops.nanmin, (N,), {}, np.nanmin(N)),
    ("nanargmax", ops.nanargmax, (N[:2],), {"axis": 1}, np.nanargmax(N[:2], 1)),
    ("nanargmin", ops.nanargmin, (N,), {}, np.nanargmin(N)),
    ("nancumsum", ops.nancumsum, (N,), {"axis": 1}, np.nancumsum(N, 1)),
    ("nancumprod", ops.nancumprod, (N,), {}, np.nancumprod(N)),
    ("amax", ops.amax, (X,), {"axis": 0}, np.amax(X, 0)),
    ("amin", ops.amin, (X,), {"keepdims": True}, np.amin(X, keepdims=True)),
    ("ptp", ops.ptp, (X,), {"axis": 1}, np.ptp(X, 1)),
    ("average", ops.average, (X,), {"axis": 1, "weights": np.arange(1.0, 5.0)},
     np.average(X, 1, np.arange(1.0, 5.0))),
    ("average_all", ops.average, (X,), {}, np.average(X)),
    ("corrcoef", ops.corrcoef, (X,), {}, np.corrcoef(X)),
    ("trapezoid", ops.trapezoid, (X,), {}, np.trapezoid(X)),
    ("trapezoid_x", ops.trapezoid, (X, np.array([0.0, 1.0, 3.0, 4.0])), {},
     np.trapezoid(X, [0.0, 1.0, 3.0, 4.0])),
    ("trapezoid_dx", ops.trapezoid, (X,), {"dx": 0.5, "axis": 0}, np.trapezoid(X, dx=0.5, axis=0)),
    ("searchsorted", ops.searchsorted, (np.array([1, 3, 5]), np.array([0, 3, 6])), {},
     np.searchsorted([1, 3, 5], [0, 3, 6])),
    ("searchsorted_right", ops.searchsorted, (np.array([1, 3, 5]), np.array([0, 3, 6])),
     {"side": "right"}, np.searchsorted([1, 3, 5], [0, 3, 6], "right")),
    ("digitize", ops.digitize, (X, np.array([-1.0, 0.0, 1.0])), {},
     np.digitize(X, [-1.0, 0.0, 1.0])),
    ("digitize_descending", ops.digitize, (X, np.array([1.0, 0.0, -1.0])), {},
     np.digitize(X, [1.0, 0.0, -1.0])),
    ("bincount", ops.bincount, (np.array([0, 2, 2, 5]),), {}, np.bincount([0, 2, 2, 5])),
    ("bincount_weights", ops.bincount, (np.array([0, 2, 2]),),
     {"weights": np.array([0.5, 1.0, 2.0]), "minlength": 5},
     np.bincount([0, 2, 2], [0.5, 1.0, 2.0], 5)),
    ("bincount_rows", ops.bincount, (np.array([[0, 1], [1, 1]]),), {}, np.array([[1, 1], [0, 2]])),
    ("histogram", ops.histogram, (X,), {"bins": 4}, np.histogram(X, 4)),
    ("histogram_range", ops.histogram, (X,), {"bins": 4, "range": (-1, 1)},
     np.histogram(X, 4, (-1, 1))),
]  # fmt: skip


@pytest.mark.parametrize(
    "fn, args, kwargs, want", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_on_values(fn, args, kwargs, want):
    check_values(fn, args, kwargs, want, rtol=1e-6, atol=2e-7)  # windows, spaces: float32


def test_erfinv_inverts_erf_and_argpartition_partitions():
    from math import erf

    y = np.vectorize(erf)(X)
    np.testing.assert_allclose(ops.erfinv(y), X, rtol=1e-6)
    order = np.asarray(ops.argpartition(X, 2, axis=1))
    np.testing.assert_array_equal(np.take_along_axis(X, order, 1)[:, 2], np.sort(X, 1)[:, 2])
    assert ops.view(np.array([1.0], np.float32), "int32")[0] == 1065353216
    np.testing.assert_array_equal(ops.get_item(X, (0, slice(1, 3))), X[0, 1:3])
    np.testing.assert_array_equal(ops.vectorize(lambda a, b: a + b)(np.arange(3), 1), [1, 2, 3])


@pytest.mark.slow  # one graph of every case (the values run the same graph code on constants)
def test_on_graph_tensors():
    check_graph([c for c in CASES if c[0] not in ("nonzero",)], rtol=1e-6, atol=2e-7)


GRADIENT_CASES = [
    ("hypot", ops.hypot, [X, Y], [0, 1]),
    ("logaddexp", ops.logaddexp, [X, Y], [0, 1]),
    ("sinc", ops.sinc, [X], [0]),
    ("i0", ops.i0, [X], [0]),
    ("erfinv", ops.erfinv, [np.tanh(X) * 0.9], [0]),
    ("kron", ops.kron, [X[:2, :2], Y[:2, :3]], [0, 1]),
    ("correlate", ops.correlate, [V, W], [0, 1]),
    ("quantile", lambda x: ops.quantile(x, [0.2, 0.7], axis=1), [X], [0]),
    ("nanvar", lambda x: ops.nanvar(x, axis=1), [X], [0]),
    ("corrcoef", ops.corrcoef, [X], [0]),
    ("trapezoid", ops.trapezoid, [X, np.array([0.0, 1.0, 3.0, 4.0])], [0, 1]),
    ("roll", lambda x: ops.roll(x, 2, 1), [X], [0]),
]


@pytest.mark.slow  # central differences: a session run per input element
@pytest.mark.parametrize(
    "fn, args, wrt", [c[1:] for c in GRADIENT_CASES], ids=[c[0] for c in GRADIENT_CASES]
)
def test_gradients(fn, args, wrt):
    check_case_gradients(fn, args, {}, wrt)
