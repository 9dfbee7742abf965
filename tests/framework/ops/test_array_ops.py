"""Array ops against NumPy: layout, joining, slicing and Python indexing, gather/where, filling,
shape ops; static shapes against run-time shapes; construction and run-time errors.

Every table row builds its graph from a placeholder whose shape is fully known ("static") or has
every dimension unknown ("unknown_dims"), runs it with the same value, compares with NumPy, and
checks the static dtype and shape against the result (equal when the input shape is known).
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import sluice as sl
from sluice.framework.ir import registry
from sluice.framework.ops.array import array_ops as A
from sluice.framework.ops.array import fill_ops, join_ops, slicing_ops  # noqa: F401
from sluice.framework.ops.core import array_util  # noqa: F401
from sluice.framework.ops.core.shape_rules import constant_value

F32, F64, I32, I64, BOOL = (np.dtype(d) for d in ("float32", "float64", "int32", "int64", "bool"))
NUMERIC = (F32, I32)
ANY = (F32, I64, BOOL)


def _values(shape, dtype, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == BOOL:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(-3, 4, shape).astype(dtype)
    return rng.uniform(-3, 3, shape).astype(dtype)


def _run(fetches, feed_dict=None):
    with sl.Session() as sess:
        return sess.run(fetches, feed_dict=feed_dict)


def _check(tensor, got, want, exact: bool) -> None:
    """`got` equals NumPy's `want`; the static dtype is right and the static shape fits."""
    want = np.asarray(want)
    assert tensor.dtype == got.dtype == want.dtype, (tensor.dtype, got.dtype, want.dtype)
    assert tensor.shape.is_compatible_with(got.shape), f"static {tensor.shape} vs run {got.shape}"
    if exact:
        assert tensor.shape.is_fully_defined(), f"static shape {tensor.shape} should be known"
        assert tuple(tensor.shape.as_list()) == got.shape
    assert got.shape == want.shape
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)


def _np_one_hot(x, depth=4, axis=-1):
    hot = (x[..., None] == np.arange(depth)).astype(np.float32)
    return np.moveaxis(hot, -1, axis)


# (name, sluice builder of x, NumPy reference, input shapes, dtypes, static shape is exact)
OPS = [
    ("reshape_flat", lambda x: A.reshape(x, [-1]), lambda x: x.reshape(-1),
     [(2, 3, 4), (5,)], ANY, True),
    ("reshape_rows", lambda x: A.reshape(x, [2, -1]), lambda x: x.reshape(2, -1),
     [(2, 3, 4), (4, 1)], ANY, True),
    ("reshape_flatten", lambda x: A.reshape(x, A.stack([A.shape(x)[0], -1])),
     lambda x: x.reshape(x.shape[0], -1), [(2, 3, 4), (3, 1)], NUMERIC, True),
    ("transpose", lambda x: A.transpose(x), lambda x: x.T, [(2, 3, 4), (3,)], ANY, True),
    ("transpose_perm", lambda x: A.transpose(x, [1, 0, 2]), lambda x: x.transpose(1, 0, 2),
     [(2, 3, 4)], ANY, True),
    ("expand_dims_0", lambda x: A.expand_dims(x, 0), lambda x: x[None], [(2, 3), ()], ANY, True),
    ("expand_dims_-1", lambda x: A.expand_dims(x, -1), lambda x: x[..., None],
     [(2, 3)], NUMERIC, True),
    ("squeeze_axis", lambda x: A.squeeze(x, [0, 2]), lambda x: x.squeeze((0, 2)),
     [(1, 3, 1, 1)], ANY, True),
    ("concat_0", lambda x: A.concat([x, x, x], 0), lambda x: np.concatenate([x, x, x], 0),
     [(2, 3), (4,)], ANY, True),
    ("concat_-1", lambda x: A.concat([x, A.reverse(x, [0])], -1),
     lambda x: np.concatenate([x, x[::-1]], -1), [(2, 3, 2)], NUMERIC, True),
    ("split_even", lambda x: A.split(x, 3, axis=1), lambda x: np.split(x, 3, 1),
     [(2, 6), (1, 3, 2)], ANY, True),
    ("split_sizes", lambda x: A.split(x, [1, -1, 2], axis=-1),
     lambda x: np.split(x, [1, x.shape[-1] - 2], -1), [(2, 6), (5,)], NUMERIC, True),
    ("stack_1", lambda x: A.stack([x, x], axis=1), lambda x: np.stack([x, x], 1),
     [(2, 3), (4,)], ANY, True),
    ("stack_-1", lambda x: A.stack([x, x, x], axis=-1), lambda x: np.stack([x, x, x], -1),
     [(2, 3), ()], NUMERIC, True),
    ("unstack_1", lambda x: A.unstack(x, num=3, axis=1), lambda x: list(np.moveaxis(x, 1, 0)),
     [(2, 3), (2, 3, 4)], ANY, True),
    ("slice", lambda x: A.slice(x, [1, 0], [-1, 2]), lambda x: x[1:, 0:2],
     [(3, 4), (2, 2)], ANY, True),
    ("tile", lambda x: A.tile(x, [2, 1, 3]), lambda x: np.tile(x, (2, 1, 3)),
     [(2, 3, 1)], ANY, True),
    ("pad", lambda x: A.pad(x, [[1, 0], [2, 2]]), lambda x: np.pad(x, [[1, 0], [2, 2]]),
     [(2, 3)], ANY, True),
    ("pad_value", lambda x: A.pad(x, [[0, 1], [1, 0]], constant_values=5),
     lambda x: np.pad(x, [[0, 1], [1, 0]], constant_values=5), [(2, 3)], NUMERIC, True),
    ("pad_reflect", lambda x: A.pad(x, [[1, 1], [2, 0]], "REFLECT"),
     lambda x: np.pad(x, [[1, 1], [2, 0]], "reflect"), [(3, 3)], NUMERIC, True),
    ("pad_symmetric", lambda x: A.pad(x, [[2, 1], [0, 3]], "symmetric"),
     lambda x: np.pad(x, [[2, 1], [0, 3]], "symmetric"), [(2, 3)], ANY, True),
    ("cast_f64", lambda x: A.cast(x, sl.float64), lambda x: x.astype(F64), [(2, 3)], ANY, True),
    ("cast_i32", lambda x: A.cast(x, sl.int32), lambda x: x.astype(I32), [(2, 3)], ANY, True),
    ("to_float", lambda x: A.to_float(x), lambda x: x.astype(F32), [(4,)], (I32, F64, BOOL), True),
    ("shape", lambda x: A.shape(x), lambda x: np.array(x.shape, I32), [(2, 3), ()], ANY, True),
    ("shape_i64", lambda x: A.shape(x, out_type=sl.int64), lambda x: np.array(x.shape, I64),
     [(2, 3)], (F32,), True),
    ("size", lambda x: A.size(x), lambda x: np.array(x.size, I32), [(2, 3), (0, 4)], ANY, True),
    ("rank", lambda x: A.rank(x), lambda x: np.array(x.ndim, I32), [(2, 3), ()], ANY, True),
    ("zeros_like", lambda x: A.zeros_like(x), np.zeros_like, [(2, 3)], ANY, True),
    ("ones_like", lambda x: A.ones_like(x), np.ones_like, [(2, 3)], ANY, True),
    ("zeros_like_i64", lambda x: A.zeros_like(x, dtype=sl.int64),
     lambda x: np.zeros(x.shape, I64), [(2, 3)], (F32,), True),
    ("zeros_of_shape", lambda x: A.zeros(A.shape(x), x.dtype), np.zeros_like,
     [(2, 3)], ANY, True),
    ("ones_of_shape", lambda x: A.ones(A.shape(x), sl.int64), lambda x: np.ones(x.shape, I64),
     [(3,)], (F32,), True),
    ("fill", lambda x: A.fill(A.shape(x), 7), lambda x: np.full(x.shape, 7, I32),
     [(2, 3)], (F32,), True),
    ("gather_1", lambda x: A.gather(x, [2, 0, 2], axis=1), lambda x: x[:, [2, 0, 2]],
     [(2, 3), (1, 4, 2)], ANY, True),
    ("gather_2d_idx", lambda x: A.gather(x, [[1, 0], [0, 0]]),
     lambda x: x[np.array([[1, 0], [0, 0]])], [(2, 3)], NUMERIC, True),
    ("gather_batch", lambda x: A.gather(x, [[1, 0], [2, 2]], axis=1, batch_dims=1),
     lambda x: np.stack([x[0][[1, 0]], x[1][[2, 2]]]), [(2, 3, 2)], NUMERIC, True),
    ("where_select", lambda x: A.where(A.cast(x, sl.bool), x, A.zeros_like(x)),
     lambda x: np.where(x.astype(bool), x, 0), [(2, 3)], NUMERIC, True),
    ("where_rows", lambda x: A.where([True, False], x, A.ones_like(x)),
     lambda x: np.where(np.array([True, False])[:, None], x, 1), [(2, 3)], NUMERIC, True),
    ("where_v2_broadcast", lambda x: A.where_v2([True, False, True], x, 0),
     lambda x: np.where([True, False, True], x, 0).astype(x.dtype), [(2, 3)], (I32,), True),
    ("where_coords", lambda x: A.where(A.cast(x, sl.bool)), lambda x: np.argwhere(x.astype(bool)),
     [(2, 3), (4,)], NUMERIC, False),
    ("boolean_mask", lambda x: A.boolean_mask(x, A.cast(x, sl.bool)), lambda x: x[x.astype(bool)],
     [(2, 3)], NUMERIC, False),
    ("boolean_mask_rows", lambda x: A.boolean_mask(x, [True, False, True], axis=1),
     lambda x: x[:, [True, False, True]], [(2, 3, 2)], ANY, False),
    ("broadcast_to", lambda x: A.broadcast_to(x, [2, 3, 4]),
     lambda x: np.broadcast_to(x, (2, 3, 4)), [(3, 1), (4,)], ANY, True),
    ("reverse", lambda x: A.reverse(x, [-1, 0]), lambda x: x[::-1, ..., ::-1],
     [(2, 3, 2)], ANY, True),
    ("one_hot", lambda x: A.one_hot(x, 4), _np_one_hot, [(3,), (2, 3)], (I32, I64), True),
    ("one_hot_axis0", lambda x: A.one_hot(x, 4, axis=0), lambda x: _np_one_hot(x, axis=0),
     [(2, 3)], (I32,), True),
    ("one_hot_values", lambda x: A.one_hot(x, 4, on_value=5, off_value=-1),
     lambda x: np.where(_np_one_hot(x) == 1, 5, -1).astype(I32), [(3,)], (I32,), True),
]  # fmt: skip


def _op_params():
    for name, build, ref, shapes, dts, exact in OPS:
        for shape in shapes:
            for dtype in dts:  # unknown dims: with the first dtype only, to keep the run short
                for mode in ("static", "unknown_dims") if dtype == dts[0] else ("static",):
                    yield pytest.param(
                        build,
                        ref,
                        shape,
                        dtype,
                        mode,
                        exact,
                        id=f"{name}-{shape}-{dtype.name}-{mode}",
                    )


@pytest.mark.parametrize("build, ref, shape, dtype, mode, exact", list(_op_params()))
def test_op_against_numpy(build, ref, shape, dtype, mode, exact):
    value = _values(shape, dtype)  # one_hot rows: negative indices give rows of off_value
    static = shape if mode == "static" else [None] * len(shape)
    x = sl.placeholder(dtype, static)
    out = build(x)
    want = ref(value)
    outs, wants = (out, want) if isinstance(out, list) else ([out], [want])
    assert len(outs) == len(wants)
    got = _run(outs, {x: value})
    for t, g, w in zip(outs, got, wants):
        _check(t, g, w, exact and mode == "static")


# -- Python indexing ------------------------------------------------------------------------------
class _T:
    """Stands for a scalar int Tensor index with the given value (fed at run time)."""

    def __init__(self, value: int):
        self.value = value


def _key(key, tensors):
    """The key with `_T` entries replaced: by placeholders (sluice) or their values (NumPy)."""

    def one(k, as_tensor):
        if isinstance(k, _T):
            if not as_tensor:
                return k.value
            t = sl.placeholder(sl.int32, [])
            tensors[t] = k.value
            return t
        if isinstance(k, slice):
            return slice(*(one(v, as_tensor) for v in (k.start, k.stop, k.step)))
        return k

    items = key if isinstance(key, tuple) else (key,)
    sl_key = tuple(one(k, True) for k in items)
    np_key = tuple(one(k, False) for k in items)
    return sl_key, np_key


INDEXING = [
    ("rows_steps", (slice(1, 3), slice(None, None, 2))),
    ("ellipsis_last", (Ellipsis, -1)),
    ("newaxis", (None, slice(None), 1)),
    ("reversed", slice(None, None, -1)),
    ("tensor", _T(2)),
    ("tensor_neg", _T(-1)),
    ("tensor_and_slice", (_T(1), slice(1, 3))),
    ("tensor_stop", (slice(None), slice(None, _T(3)))),
    ("int", 3),
    ("neg_int", -4),
    ("tail", (slice(None), slice(-2, None))),
    ("int_ellipsis_new", (1, Ellipsis, None)),
    ("neg_steps", (slice(None, None, -2), slice(1, -1, 2))),
    ("newaxis_after_ellipsis", (Ellipsis, None, 0)),
    ("reverse_range", (slice(3, 0, -1),)),
    ("empty", slice(10, None)),
    ("clamped", (slice(-10, 10), slice(2, 100, 3))),
    ("all_ints", (0, 1, 2)),
    ("unit", ()),
    ("middle_ellipsis", (1, Ellipsis, slice(None, None, -1))),
]


@pytest.mark.parametrize("key", [k for _, k in INDEXING], ids=[n for n, _ in INDEXING])
@pytest.mark.parametrize("mode", ["static", "unknown_dims"])
def test_getitem(key, mode):
    value = _values((4, 5, 6), F32)
    x = sl.placeholder(sl.float32, (4, 5, 6) if mode == "static" else (None, None, None))
    feeds = {x: value}
    sl_key, np_key = _key(key, feeds)
    out = x[sl_key if isinstance(key, tuple) else sl_key[0]]
    assert out.op.type == "StridedSlice"
    items = key if isinstance(key, tuple) else (key,)
    has_tensor_range = any(isinstance(k, slice) and isinstance(k.stop, _T) for k in items)
    _check(out, _run(out, feeds), value[np_key], mode == "static" and not has_tensor_range)


def test_getitem_one_op_and_static_masks():
    x = sl.placeholder(sl.float32, (4, 5, 6))
    y = x[1:3, ..., None, -1]
    assert [op.type for op in sl.get_default_graph().get_operations()].count("StridedSlice") == 1
    assert y.op.get_attr("ellipsis_mask") == 0b10
    assert y.op.get_attr("new_axis_mask") == 0b100
    assert y.op.get_attr("shrink_axis_mask") == 0b1000
    assert y.shape.as_list() == [2, 5, 1]
    assert constant_value(y.op.inputs[1]).tolist() == [1, 0, 0, -1]


def test_strided_slice_wrapper_matches_indexing():
    value = _values((4, 5), I32)
    x = sl.constant(value)
    y = A.strided_slice(x, [3, 1], [0, 0], [-1, 2], end_mask=0b10)
    _check(y, _run(y), value[3:0:-1, 1::2], True)
    z = A.strided_slice(x, [-1], [0], shrink_axis_mask=1)
    _check(z, _run(z), value[-1], True)


def test_strided_slice_kernel_takes_a_traced_integer_index():
    t = sl.placeholder(sl.int32, [])
    y = sl.placeholder(sl.float32, (4, 5, 6))[t, :, ::2]  # ranges must not need begin or end
    op = y.op
    strides = constant_value(op.inputs[3])
    value = _values((4, 5, 6), F32)

    def kernel(x, begin, end):
        return op.op_def.kernel(x, begin, end, strides, **op.attrs)

    index = np.array([-1, 0, 1], np.int32)
    got = jax.jit(kernel)(value, index, index)
    np.testing.assert_array_equal(got, value[-1, :, ::2])


@pytest.mark.parametrize("engine", ["compiled", "interpreted"])
def test_strided_slice_with_a_run_time_begin_cut_to_its_set_shape(engine):
    """TF1's PTB reader: `strided_slice(data, [0, i * n], [b, (i + 1) * n])` + `set_shape`, where
    `i` comes from the run. The compiled engine cuts the window `set_shape` fixed (a dynamic
    slice) instead of running the graph interpreted; the gradient puts it back in place."""
    data = np.arange(4 * 30, dtype=np.float32).reshape(4, 30)
    i = sl.placeholder(sl.int32, [])
    v = sl.Variable(2.0)
    x = sl.strided_slice(sl.constant(data) * v, [0, i * 5], [4, (i + 1) * 5])
    x.set_shape([4, 5])
    row = sl.constant(data)[1, i : i + 3]  # a shrunk axis and a traced begin
    row.set_shape([3])
    tail = sl.constant(data)[:, -i - 2 : -i]  # a negative begin counts from the end
    tail.set_shape([4, 2])
    grad = sl.gradients(sl.reduce_sum(x * x), [v])[0]
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        sess.run(sl.global_variables_initializer())
        for k in (1, 3):
            metadata = sl.RunMetadata()
            got = sess.run([x, row, tail, grad], {i: k}, run_metadata=metadata)
            window = data[:, k * 5 : (k + 1) * 5]
            np.testing.assert_array_equal(got[0], 2 * window)
            np.testing.assert_array_equal(got[1], data[1, k : k + 3])
            np.testing.assert_array_equal(got[2], data[:, -k - 2 : -k])
            np.testing.assert_allclose(got[3], (4 * window * window).sum(), rtol=1e-6)
            assert metadata.engine == engine


def test_tensor_index_inside_shape():
    x = sl.placeholder(sl.float32, (None, 3))
    n = A.shape(x)[0]
    assert n.shape.as_list() == []
    assert array_util.scalar_int_value(A.shape(sl.constant(np.zeros((2, 3))))[1]) == 3
    assert _run(n, {x: np.zeros((5, 3), np.float32)}) == 5


# -- other ops ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args, kwargs, want",
    [
        ((5,), {}, np.arange(5, dtype=I32)),
        ((2, 11, 3), {}, np.arange(2, 11, 3, dtype=I32)),
        ((10, 2, -3), {}, np.arange(10, 2, -3, dtype=I32)),
        ((1.0, 2.0, 0.25), {}, np.arange(1, 2, 0.25, dtype=F32)),
        ((0, 1, 0.3), {}, np.arange(0, 1, 0.3).astype(F32)),
        ((4,), {"dtype": sl.int64}, np.arange(4, dtype=I64)),
        ((3,), {"dtype": sl.float64}, np.arange(3, dtype=F64)),
        ((3, 3), {}, np.arange(3, 3, dtype=I32)),
    ],
)
def test_range(args, kwargs, want):
    out = fill_ops.range(*args, **kwargs)
    _check(out, _run(out), want, True)


def test_range_of_tensor_limit_has_unknown_length():
    n = sl.placeholder(sl.int32, [])
    out = fill_ops.range(n)
    assert out.shape.as_list() == [None]
    _check(out, _run(out, {n: 4}), np.arange(4, dtype=I32), False)


def test_one_hot_out_of_range_and_dtypes():
    out = A.one_hot([0, -1, 3, 7], 4, dtype=sl.int64)
    _check(out, _run(out), _np_one_hot(np.array([0, -1, 3, 7])).astype(I64), True)
    on = A.one_hot([1], 2, on_value=sl.constant(2.0, sl.float64))
    assert on.dtype == F64


def test_transpose_of_unknown_rank():
    x = sl.placeholder(sl.float32)
    y = A.transpose(x)
    value = _values((2, 3, 4), F32)
    _check(y, _run(y, {x: value}), value.T, False)


def test_zeros_ones_fill_from_lists():
    n = sl.placeholder(sl.int32, [])
    cases = [
        (A.zeros([2, 3]), np.zeros((2, 3), F32)),
        (A.ones((2,), sl.bool), np.ones(2, BOOL)),
        (A.zeros(sl.TensorShape([3, 1]), sl.int32), np.zeros((3, 1), I32)),
        (A.fill([2, 2], 1.5), np.full((2, 2), 1.5, F32)),
    ]
    for t, want in cases:
        _check(t, _run(t), want, True)
    dynamic = A.ones([n, 3], sl.int64)
    assert dynamic.shape.as_list() == [None, 3]
    _check(dynamic, _run(dynamic, {n: 2}), np.ones((2, 3), I64), False)


def test_static_values_of_shape_size_rank():
    x = sl.placeholder(sl.float32, (2, 3))
    assert constant_value(A.shape(x)).tolist() == [2, 3]
    assert constant_value(A.size(x)) == 6
    assert constant_value(A.rank(x)) == 2
    y = sl.placeholder(sl.float32, (None, 3))
    assert constant_value(A.shape(y)) is None
    assert constant_value(A.size(y)) is None
    assert constant_value(A.rank(y)) == 2
    assert constant_value(A.rank(sl.placeholder(sl.float32))) is None
    assert A.shape(sl.placeholder(sl.float32)).shape.as_list() == [None]


def test_partial_static_shapes():
    x = sl.placeholder(sl.float32, (None, 4, 5))
    assert A.reshape(x, [-1, 20]).shape.as_list() == [None, 20]
    assert A.reshape(x, A.stack([A.shape(x)[0], -1])).shape.as_list() == [None, 20]
    assert A.reshape(x, A.concat([A.shape(x)[:1], [5, 4]], 0)).shape.as_list() == [None, 5, 4]
    assert A.concat([x, x], 0).shape.as_list() == [None, 4, 5]
    assert A.concat([x, sl.placeholder(sl.float32, (3, None, 5))], 1).shape.as_list() == [
        3,
        None,
        5,
    ]
    assert A.squeeze(x).shape.rank is None  # an unknown dim may or may not be 1
    assert A.squeeze(sl.placeholder(sl.float32, (None, 1)), [1]).shape.as_list() == [None]
    assert A.tile(x, [2, 1, 3]).shape.as_list() == [None, 4, 15]
    assert A.transpose(x, [2, 0, 1]).shape.as_list() == [5, None, 4]
    assert A.transpose(x, sl.placeholder(sl.int32, [3])).shape.as_list() == [None] * 3
    assert A.gather(x, sl.placeholder(sl.int32, (7,)), axis=2).shape.as_list() == [None, 4, 7]
    assert A.split(x, [1, -1], axis=2)[1].shape.as_list() == [None, 4, 4]
    assert A.pad(x, [[1, 1], [0, 0], [2, 0]]).shape.as_list() == [None, 4, 7]
    assert A.one_hot(
        sl.placeholder(sl.int32, [None]), sl.placeholder(sl.int32, [])
    ).shape.as_list() == [None, None]
    assert A.slice(x, sl.placeholder(sl.int32, [3]), [1, 2, -1]).shape.as_list() == [1, 2, None]
    assert A.broadcast_to(
        sl.placeholder(sl.float32, (3, 1)), A.stack([A.shape(x)[0], 3, 2])
    ).shape.as_list() == [None, 3, 2]
    assert A.where(sl.placeholder(sl.bool, (None, 2, 3))).shape.as_list() == [None, 3]
    assert A.expand_dims(sl.placeholder(sl.float32), 0).shape.rank is None


def test_kernels_of_host_input_ops_are_not_jitted():
    with_host_inputs = {n for n, d in registry.registered_ops().items() if d.host_inputs}
    for op_type in with_host_inputs:
        op_def = registry.get_op_def(op_type)
        assert op_def.stateful or not op_def.jit, op_type  # stateful kernels are never jitted
    assert {"Reshape", "StridedSlice", "RandomUniform"} <= with_host_inputs
    assert registry.get_op_def("Where").jit is False
    assert registry.get_op_def("Pack").jit is True


# -- errors ---------------------------------------------------------------------------------------
def _x(shape=(2, 3), dtype=sl.float32):
    return sl.placeholder(dtype, shape)


CONSTRUCTION_ERRORS = [
    ("reshape_count", lambda: A.reshape(_x(), [4, 2]), ValueError, "Cannot reshape"),
    ("reshape_indivisible", lambda: A.reshape(_x(), [4, -1]), ValueError, "not divisible"),
    ("reshape_two_unknown", lambda: A.reshape(_x(), [-1, -1]), ValueError, "at most one -1"),
    ("reshape_multiple_of_known", lambda: A.reshape(_x((None, 4)), [3, 3]), ValueError,
     "multiple of 4"),
    ("concat_rank", lambda: A.concat([_x(), _x((2, 3, 1))], 0), ValueError, "same rank"),
    ("concat_dim", lambda: A.concat([_x(), _x((2, 4))], 0), ValueError,
     "Dimension 1 in both shapes"),
    ("concat_axis", lambda: A.concat([_x(), _x()], 2), ValueError, "out of range"),
    ("concat_dtype", lambda: A.concat([_x(), _x(dtype=sl.int32)], 0), TypeError, "dtype"),
    ("split_uneven", lambda: A.split(_x(), 2, axis=1), ValueError, "cannot be split evenly"),
    ("split_sizes_sum", lambda: A.split(_x(), [1, 1], axis=1), ValueError, "add up to 2, not"),
    ("squeeze_non_1", lambda: A.squeeze(_x((1, 3)), [1]), ValueError,
     "Can not squeeze dim\\[1\\]"),
    ("gather_float_indices", lambda: A.gather(_x(), sl.constant([0.0])), TypeError,
     "int32 or int64"),
    ("gather_out_of_range", lambda: A.gather(_x(), [0, 3], axis=1), ValueError,
     "not in \\[0, 3\\)"),
    ("index_out_of_range", lambda: _x()[2], ValueError, "out of bounds"),
    ("index_neg_out_of_range", lambda: _x()[:, -4], ValueError, "out of bounds"),
    ("too_many_indices", lambda: _x()[0, 0, 0], ValueError, "Index out of range"),
    ("two_ellipses", lambda: _x()[..., ...], ValueError, "single ellipsis"),
    ("zero_step", lambda: _x()[::0], ValueError, "non-zero"),
    ("float_index", lambda: _x()[1.0], TypeError, "valid indices"),
    ("bool_tensor_index", lambda: _x()[_x(dtype=sl.bool)], TypeError, "int32 or int64 scalars"),
    ("list_index", lambda: _x()[[0, 1]], TypeError, "valid indices"),
    ("slice_too_big", lambda: A.slice(_x(), [1, 1], [2, 1]), ValueError,
     "begin\\[0\\] \\+ size\\[0\\]"),
    ("transpose_perm", lambda: A.transpose(_x(), [0, 0]), ValueError, "permutation"),
    ("stack_shapes", lambda: A.stack([_x(), _x((3, 2))]), ValueError, "compatible shapes"),
    ("unstack_num", lambda: A.unstack(_x((None, 3))), ValueError, "Cannot infer num"),
    ("tile_length", lambda: A.tile(_x(), [2]), ValueError, "one entry per dimension"),
    ("pad_shape", lambda: A.pad(_x(), [[1, 1]]), ValueError, "paddings must have shape"),
    ("pad_reflect_too_big", lambda: A.pad(_x(), [[0, 0], [3, 0]], "REFLECT"), ValueError,
     "at most 2"),
    ("pad_mode", lambda: A.pad(_x(), [[0, 0], [1, 0]], "EDGE"), ValueError, "pad mode"),
    ("broadcast_to", lambda: A.broadcast_to(_x(), [3, 3]), ValueError, "cannot broadcast"),
    ("where_xy_shapes", lambda: A.where(_x(dtype=sl.bool), _x(), _x((3, 3))), ValueError,
     "do not broadcast"),
    ("where_cond_dtype", lambda: A.where(_x(), _x(), _x()), TypeError, "bool"),
    ("where_one_of_xy", lambda: A.where(_x(dtype=sl.bool), _x()), ValueError, "both"),
    ("one_hot_dtype", lambda: A.one_hot(_x(dtype=sl.float32), 3), TypeError, "indices"),
    ("range_delta_0", lambda: fill_ops.range(0, 5, 0), ValueError, "delta != 0"),
    ("range_direction", lambda: fill_ops.range(5, 0, 1), ValueError, "start <= limit"),
    ("fill_negative", lambda: A.fill([2, -1], 0.0), ValueError, "must not be negative"),
    ("expand_dims_axis", lambda: A.expand_dims(_x(), 3), ValueError, "out of range"),
    ("boolean_mask_shape", lambda: A.boolean_mask(_x(), [True, False, True]), ValueError,
     "does not match"),
    ("reverse_twice", lambda: A.reverse(_x(), [0, -2]), ValueError, "more than once"),
]  # fmt: skip


@pytest.mark.parametrize(
    "build, error, match",
    [c[1:] for c in CONSTRUCTION_ERRORS],
    ids=[c[0] for c in CONSTRUCTION_ERRORS],
)
def test_construction_errors(build, error, match):
    with pytest.raises(error, match=match):
        build()


RUNTIME_ERRORS = [
    ("index", lambda x: x[5], "out of bounds"),
    ("tensor_index", lambda x: x[sl.constant(-6)], "out of bounds"),
    ("gather", lambda x: A.gather(x, [0, 9]), "not in \\[0, 4\\)"),
    ("slice", lambda x: A.slice(x, [3, 0], [2, -1]), "do not fit"),
    ("reshape", lambda x: A.reshape(x, [5, -1]), "reshape"),
    ("split", lambda x: A.split(x, 3), "split"),
]


@pytest.mark.parametrize(
    "build, match", [c[1:] for c in RUNTIME_ERRORS], ids=[c[0] for c in RUNTIME_ERRORS]
)
def test_runtime_errors_on_unknown_dims(build, match):
    x = sl.placeholder(sl.float32, (None, None))
    out = build(x)
    with pytest.raises(sl.errors.InvalidArgumentError, match=match):
        _run(out, {x: np.zeros((4, 2), np.float32)})
