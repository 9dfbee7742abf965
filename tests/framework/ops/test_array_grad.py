"""Gradients of the array ops against float64 central differences: layout, broadcasting, joining,
padding, slicing and Python indexing, gather and select; with static and with unknown shapes.

Every row of GRADS builds y from one placeholder per input shape; `unknown(x)` hides the static
dims of x (`placeholder_with_default(x, [None, ...])`), so the gradients must read shapes at run
time. All these ops are linear in their float inputs, so central differences are exact up to
rounding and the tolerances are tight.
"""

from __future__ import annotations

import numpy as np
import pytest

import sluice as sl
from sluice.framework.ops.array import array_ops
from sluice.testing import check_gradients

F32, F64 = np.dtype("float32"), np.dtype("float64")
COND_34 = np.array([[True, False, True, True], [False, False, True, False], [True] * 4])


def unknown(x):
    """`x` with every static dimension unknown (its rank stays known)."""
    return sl.placeholder_with_default(x, [None] * x.shape.rank)


def unknown_rank(x):
    return sl.placeholder_with_default(x, None)


def run_time(value):
    """An int32 value known only at run time (not folded while the graph is built)."""
    value = np.asarray(value, np.int32)
    return sl.placeholder_with_default(value, value.shape)


def _flatten_unknown(x):
    u = unknown(x)
    return sl.reshape(u, sl.stack([sl.shape(u)[0], -1]))


def _concat_split(pieces, axis):
    """The pieces in reverse order joined again, so every piece's gradient is distinct."""
    return sl.concat(pieces[::-1], axis)


# (name, build, input shapes)
GRADS = [
    # layout
    ("reshape", lambda x: sl.reshape(x, [4, -1]), [(2, 3, 4)]),
    ("reshape_to_scalar", lambda x: sl.reshape(x, []), [(1, 1)]),
    ("reshape_unknown", lambda x: sl.reshape(unknown(x), [-1, 2]), [(3, 4)]),
    ("reshape_flatten_unknown", _flatten_unknown, [(2, 3, 2)]),
    ("transpose", lambda x: sl.transpose(x, [1, 2, 0]), [(2, 3, 4)]),
    ("transpose_default", lambda x: sl.transpose(x), [(2, 3)]),
    ("transpose_unknown", lambda x: sl.transpose(unknown(x), [2, 0, 1]), [(2, 3, 4)]),
    ("transpose_unknown_rank", lambda x: sl.transpose(unknown_rank(x)), [(2, 3, 4)]),
    ("transpose_run_time_perm", lambda x: sl.transpose(x, run_time([1, 0, 2])), [(2, 3, 2)]),
    ("expand_dims", lambda x: sl.expand_dims(x, 1), [(2, 3)]),
    ("expand_dims_unknown", lambda x: sl.expand_dims(unknown(x), -1), [(2, 3)]),
    ("squeeze", lambda x: sl.squeeze(x), [(1, 3, 1)]),
    ("squeeze_unknown", lambda x: sl.squeeze(unknown(x), [0]), [(1, 3)]),
    ("reverse", lambda x: sl.reverse(x, [-1, 0]), [(2, 3, 2)]),
    # repeating
    ("tile", lambda x: sl.tile(x, [2, 1, 3]), [(2, 3, 1)]),
    ("tile_unknown", lambda x: sl.tile(unknown(x), [1, 2]), [(2, 3)]),
    ("tile_unknown_rank", lambda x: sl.tile(unknown_rank(x), [2, 2]), [(3, 1)]),
    ("tile_run_time_multiples", lambda x: sl.tile(x, run_time([3, 1])), [(2, 2)]),
    ("broadcast_to", lambda x: sl.broadcast_to(x, [2, 3, 4]), [(3, 1)]),
    ("broadcast_to_scalar", lambda x: sl.broadcast_to(x, [2, 3]), [()]),
    ("broadcast_to_rows", lambda x: sl.broadcast_to(x, [3, 4]), [(4,)]),
    ("broadcast_to_same", lambda x: sl.broadcast_to(x, [2, 3]), [(2, 3)]),
    ("broadcast_to_unknown", lambda x: sl.broadcast_to(unknown(x), [2, 3, 4]), [(3, 1)]),
    ("broadcast_to_unknown_rank", lambda x: sl.broadcast_to(unknown_rank(x), [2, 3, 4]), [(3, 1)]),
    ("fill", lambda v: sl.fill([2, 3], v), [()]),
    ("fill_run_time_dims", lambda v: sl.fill(run_time([3, 2]), v), [()]),
    # joining and cutting
    ("stack", lambda x, y: sl.stack([x, y, x], axis=1), [(2, 3), (2, 3)]),
    ("stack_unknown", lambda x, y: sl.stack([unknown(x), y], axis=-1), [(2, 3), (2, 3)]),
    ("unstack", lambda x: sl.stack(sl.unstack(x, axis=1)[::-1]), [(2, 3)]),
    ("unstack_one_used", lambda x: sl.unstack(x)[1], [(3, 2)]),
    ("concat_3", lambda a, b, c: sl.concat([a, b, c], 0), [(2, 3), (1, 3), (3, 3)]),
    ("concat_3_last", lambda a, b, c: sl.concat([a, b, c], -1), [(2, 1), (2, 3), (2, 2)]),
    ("concat_same_twice", lambda a: sl.concat([a, a], 0), [(2, 3)]),
    ("concat_unknown", lambda a, b, c: sl.concat([unknown(a), b, unknown(c)], 1),
     [(2, 1), (2, 3), (2, 2)]),
    ("concat_unknown_rank", lambda a, b: sl.concat([unknown_rank(a), b], 0), [(1, 3), (2, 3)]),
    ("concat_run_time_axis", lambda a, b, c: sl.concat([a, b, c], run_time(1)),
     [(2, 1), (2, 3), (2, 2)]),
    ("split_3", lambda x: _concat_split(sl.split(x, 3, axis=1), 1), [(2, 6)]),
    ("split_3_one_used", lambda x: sl.split(x, 3)[1], [(6, 2)]),
    ("split_3_unknown", lambda x: _concat_split(sl.split(unknown(x), 3, axis=-1), -1), [(2, 6)]),
    ("split_sizes_3", lambda x: _concat_split(sl.split(x, [1, -1, 2], axis=-1), -1), [(2, 6)]),
    ("split_sizes_unknown", lambda x: sl.concat(sl.split(unknown(x), [2, 1, 3], 1)[1:], 1),
     [(2, 6)]),
    # padding
    ("pad", lambda x: sl.pad(x, [[1, 0], [2, 2]]), [(2, 3)]),
    ("pad_value", lambda x, c: sl.pad(x, [[0, 1], [1, 0]], constant_values=c), [(2, 3), ()]),
    ("pad_unknown", lambda x: sl.pad(unknown(x), [[1, 2], [0, 1]]), [(2, 3)]),
    ("pad_run_time_paddings", lambda x: sl.pad(x, run_time([[1, 0], [0, 2]])), [(2, 3)]),
    ("pad_reflect", lambda x: sl.pad(x, [[1, 1], [2, 0]], "REFLECT"), [(3, 3)]),
    ("pad_symmetric", lambda x: sl.pad(x, [[2, 1], [0, 3]], "SYMMETRIC"), [(2, 3)]),
    ("pad_reflect_unknown", lambda x: sl.pad(unknown(x), [[0, 2], [1, 1]], "REFLECT"), [(3, 3)]),
    # slicing and Python indexing
    ("slice", lambda x: sl.slice(x, [1, 0], [-1, 2]), [(3, 4)]),
    ("slice_unknown", lambda x: sl.slice(unknown(x), [0, 1], [2, -1]), [(3, 4)]),
    ("slice_run_time_begin", lambda x: sl.slice(x, run_time([1, 1]), [2, 2]), [(3, 4)]),
    ("index_rows_step_2", lambda x: x[1:3, ::2], [(4, 5)]),
    ("index_ellipsis_last", lambda x: x[..., -1], [(2, 3, 4)]),
    ("index_reversed", lambda x: x[::-1], [(3, 2)]),
    ("index_new_axis", lambda x: x[None, :, 1], [(2, 3)]),
    ("index_negative_step", lambda x: x[-1:0:-2, 1:], [(5, 3)]),
    ("index_ellipsis_new_axis", lambda x: x[::2, ..., None, 0], [(3, 2, 2)]),
    ("index_scalar", lambda x: x[1, -2], [(2, 3)]),
    ("index_out_of_range_stop", lambda x: x[1:10], [(3, 2)]),
    ("index_run_time", lambda x: x[run_time(2), ::-1], [(3, 4)]),
    ("index_unknown", lambda x: unknown(x)[1:, ::-2], [(3, 4)]),
    ("strided_slice_masks", lambda x: sl.strided_slice(
        x, [0, 2, 0], [0, 0, 1], [1, -1, 1], begin_mask=1, end_mask=3, shrink_axis_mask=4),
     [(2, 3, 2)]),
    # gather, boolean_mask
    ("gather_repeated", lambda x: sl.gather(x, [2, 0, 2, 2]), [(3, 2)]),
    ("gather_axis_1", lambda x: sl.gather(x, [[1, 0], [1, 1]], axis=1), [(2, 3, 2)]),
    ("gather_scalar_index", lambda x: sl.gather(x, 1, axis=-1), [(2, 3)]),
    ("gather_batch_dims", lambda x: sl.gather(x, [[1, 0], [2, 2]], axis=1, batch_dims=1),
     [(2, 3, 2)]),
    ("gather_unknown", lambda x: sl.gather(unknown(x), run_time([0, 2, 0]), axis=1), [(2, 3)]),
    ("gather_unknown_rank", lambda x: sl.gather(unknown_rank(x), [0, 0, 2]), [(3, 2)]),
    ("boolean_mask", lambda x: sl.boolean_mask(x, COND_34[:2, :3]), [(2, 3)]),
    ("boolean_mask_axis", lambda x: sl.boolean_mask(x, [True, False, True], axis=1), [(2, 3, 2)]),
    # select
    ("where", lambda x, y: sl.where(COND_34, x, y), [(3, 4), (3, 4)]),
    ("where_rows", lambda x, y: sl.where([True, False, True], x, y), [(3, 2), (3, 2)]),
    ("where_v2_broadcast", lambda x, y: sl.where_v2(COND_34, x, y), [(3, 1), (1, 4)]),
    ("where_v2_scalar", lambda x, y: sl.where_v2([True, False, True], x, y), [(2, 3), ()]),
    ("where_v2_unknown", lambda x, y: sl.where_v2(COND_34, unknown(x), y), [(3, 1), (4,)]),
    ("where_v2_unknown_rank", lambda x, y: sl.where_v2(COND_34, x, unknown_rank(y)), [(3, 1), ()]),
]  # fmt: skip


def _inputs(shapes, dtype=F64, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=shape).astype(dtype) for shape in shapes]


@pytest.mark.parametrize("build, shapes", [pytest.param(b, s, id=name) for name, b, s in GRADS])
def test_gradient_against_central_differences(build, shapes):
    check_gradients(build, _inputs(shapes), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("build, shapes", [pytest.param(b, s, id=name) for name, b, s in GRADS])
def test_gradient_static_shape(build, shapes):
    """Each gradient has its input's dtype and a compatible static shape: the same shape when no
    static dimension was hidden."""
    xs = [sl.placeholder(F64, shape) for shape in shapes]
    y = build(*xs)
    grads = sl.gradients(sl.reduce_sum(y), xs)
    hidden = any(op.type == "PlaceholderWithDefault" for op in y.graph.get_operations())
    for x, g in zip(xs, grads):
        assert g.dtype == x.dtype
        assert g.shape.is_compatible_with(x.shape), (g.shape, x.shape)
        if not hidden:
            assert g.shape == x.shape, (g.shape, x.shape)


# -- Cast: float32 values need a wider step and looser tolerances -------------------------------
@pytest.mark.parametrize(
    "dtype, to, delta, tol",
    [(F32, F64, 1e-2, 1e-4), (F64, F32, 1e-3, 1e-3), (F64, F64, 1e-6, 1e-8)],
    ids=["float32_to_float64", "float64_to_float32", "same_dtype"],
)
def test_cast_gradient(dtype, to, delta, tol):
    check_gradients(
        lambda x: sl.cast(x, to), _inputs([(2, 3)], dtype), delta=delta, rtol=tol, atol=tol
    )


@pytest.mark.parametrize(
    "build",
    [
        lambda x, i: sl.cast(i, sl.float64) * x,  # int -> float: no gradient for i
        lambda x, i: sl.cast(sl.cast(x, sl.int32), sl.float64),  # through an integer
        lambda x, i: sl.gather(x, i),  # indices
        lambda x, i: sl.slice(x, sl.stack([i[0]]), [1]),  # begin
    ],
    ids=["cast_from_int", "cast_through_int", "gather_indices", "slice_begin"],
)
def test_integer_inputs_get_no_gradient(build):
    x = sl.placeholder(F64, [3])
    i = sl.placeholder(sl.int32, [3])
    _, gi = sl.gradients(sl.reduce_sum(build(x, i)), [x, i])
    assert gi is None


# -- second order: the gradient ops' own gradients ------------------------------------------------
SECOND_ORDER = [
    ("strided_slice_grad", lambda x: x[::-2, None, 1], (3, 2)),
    ("gather_v2_grad", lambda x: sl.gather(x, [[1, 1], [0, 2]], axis=1), (2, 3)),
    ("mirror_pad_grad", lambda x: sl.pad(x, [[1, 2], [0, 1]], "SYMMETRIC"), (2, 3)),
    ("slice_pad", lambda x: sl.slice(x, [0, 1], [2, 2]), (3, 3)),
]


@pytest.mark.parametrize("f, shape", [pytest.param(f, s, id=n) for n, f, s in SECOND_ORDER])
def test_gradient_of_gradient(f, shape):
    """The gradient of f at a fixed x, as a function of the weights w on f's output."""
    (x_value,) = _inputs([shape], seed=1)
    y_shape = np.shape(sl.Session().run(f(sl.constant(x_value))))

    def build(w):
        x = sl.constant(x_value)
        return sl.gradients(sl.reduce_sum(f(x) * w), [x])[0]

    check_gradients(build, _inputs([y_shape], seed=2), rtol=1e-6, atol=1e-8)


def test_gather_gradient_accumulates_repeated_indices():
    x = sl.placeholder(F64, [3, 2])
    (g,) = sl.gradients(sl.reduce_sum(sl.gather(x, [2, 0, 2, 2])), [x])
    assert isinstance(g, sl.IndexedSlices)  # as TF1; the dense tensor it stands for sums repeats
    got = sl.Session().run(sl.convert_to_tensor(g), {x: np.zeros((3, 2))})
    np.testing.assert_array_equal(got, [[1, 1], [0, 0], [3, 3]])


def test_gradients_inside_while_loop():
    """Row i of x, read with a loop-counter index and by gather, summed over the iterations."""
    x_value = _inputs([(3, 4)], seed=3)[0]

    def build(x):
        def body(i, acc):
            row = x[i] + sl.gather(x, sl.stack([i]))[0, ::-1]
            return i + 1, acc + sl.concat([row[:1], row[1:]], 0) * sl.cast(i + 1, F64)

        _, acc = sl.while_loop(lambda i, acc: i < 3, body, (sl.constant(0), sl.zeros([4], F64)))
        return acc

    check_gradients(build, [x_value], rtol=1e-6, atol=1e-8)


def test_slice_to_the_end_at_a_loop_counter_compiles():
    """`slice(v, [t, 0], [1, -1])` in a loop (TF1's tensor_array tests read rows so): the
    extent of the -1 dimension is known while building, so the compiled engine runs the slice and
    its gradient's Pad at a run-time begin, with the interpreter's numbers."""
    value = np.arange(12, dtype=np.float32).reshape(4, 3)
    g = sl.Graph()
    with g.as_default():
        v = sl.constant(value)
        scale = sl.constant([[1.0, 2.0, 3.0]])

        def body(t, acc):
            row = sl.slice(v, sl.stack([t, 0]), [1, -1])
            assert row.shape.as_list() == [1, 3]
            return t + 1, acc + sl.reduce_sum(row * scale * sl.cast(t + 1, sl.float32))

        _, total = sl.while_loop(lambda t, acc: t < 4, body, (0, 0.0))
        (grad,) = sl.gradients(total, [v])
    results = {}
    for engine in ("compiled", "interpreted"):
        with sl.Session(graph=g, config=sl.SessionConfig(engine=engine)) as sess:
            results[engine] = sess.run([total, grad])
    for a, b in zip(results["compiled"], results["interpreted"]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    expected_grad = np.outer(np.arange(1, 5), [1.0, 2.0, 3.0])
    np.testing.assert_allclose(results["compiled"][1], expected_grad)
    assert results["compiled"][0] == pytest.approx(float((value * expected_grad).sum()))


def test_invert_permutation():
    perm = np.array([2, 0, 3, 1], np.int32)
    folded = array_ops.invert_permutation(perm)
    computed = array_ops.invert_permutation(run_time(perm))
    assert folded.op.type == "Const" and computed.op.type == "InvertPermutation"
    for t in (folded, computed):
        np.testing.assert_array_equal(sl.Session().run(t), np.argsort(perm))
