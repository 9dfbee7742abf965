"""TF1 sequence and indexing ops that published programs call (issue 16): sequence_mask,
reverse_sequence, gather_nd/scatter_nd, unique, top_k/in_top_k, sort/argsort, the sorted and
unsorted segment reductions, shape_n/parallel_stack/meshgrid/lin_space, the diagonal and band
ops, space_to_depth/depth_to_space.

As TF 1.x's own op tests: values against NumPy references (one graph of all value cases, run
once per engine), returned structures (namedtuples, lists), TF's error types at graph
construction, and gradients against float64 central differences in both engines.
"""

from __future__ import annotations

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
RNG = np.random.default_rng(61)
X = np.arange(12.0).reshape(3, 4) - 5.0
IMG = np.arange(32.0).reshape(1, 4, 4, 2)


def _np_reverse_sequence(x, lengths, seq_axis, batch_axis):
    out = np.array(x, copy=True)
    for b, n in enumerate(lengths):
        index = [slice(None)] * x.ndim
        index[batch_axis], index[seq_axis] = b, slice(0, n)
        out[tuple(index)] = np.flip(x[tuple(index)], axis=seq_axis - (batch_axis < seq_axis))
    return out


def _np_segments(data, ids, n, reduce, empty):
    out = np.full((n,) + data.shape[1:], empty, data.dtype)
    for j in range(n):
        rows = data[np.asarray(ids) == j]
        if len(rows):
            out[j] = reduce(rows, axis=0)
    return out


def _np_space_to_depth(x, k):
    b, h, w, c = x.shape
    return (
        x.reshape(b, h // k, k, w // k, k, c)
        .transpose(0, 1, 3, 2, 4, 5)
        .reshape(b, h // k, w // k, k * k * c)
    )


def _np_scatter(x, index_tuples, updates, how):
    out = np.array(x, copy=True)
    for index, update in zip(index_tuples, updates):
        out[index] = update if how == "set" else out[index] + update
    return out


IDS = [0, 0, 2]
UIDS = [2, -1, 2]
LOWEST = np.finfo(np.float64).min

VALUES = {  # name: (build, NumPy reference)
    "sequence_mask": (
        lambda x: sl.sequence_mask([1, 3, 0], 4),
        lambda x: np.arange(4) < np.array([[1], [3], [0]]),
    ),
    "sequence_mask_default_maxlen_float": (
        lambda x: sl.sequence_mask(np.array([[1, 2]]), dtype=sl.float32),
        lambda x: np.float32([[[1, 0], [1, 1]]]),
    ),
    "reverse_sequence": (
        lambda x: sl.reverse_sequence(x, [2, 4, 0], seq_axis=1, batch_axis=0),
        lambda x: _np_reverse_sequence(x, [2, 4, 0], 1, 0),
    ),
    "reverse_sequence_batch_last": (
        lambda x: sl.reverse_sequence(sl.transpose(x), [3, 1, 2], seq_axis=0, batch_axis=1),
        lambda x: _np_reverse_sequence(x.T, [3, 1, 2], 0, 1),
    ),
    "reverse_v2": (lambda x: sl.reverse_v2(x, [0, 1]), lambda x: x[::-1, ::-1]),
    "gather_nd_elements": (
        lambda x: sl.gather_nd(x, [[1, 2], [0, 0], [2, 3]]),
        lambda x: x[[1, 0, 2], [2, 0, 3]],
    ),
    "gather_nd_rows": (lambda x: sl.gather_nd(x, [[[2], [0]]]), lambda x: x[[[2, 0]]]),
    "scatter_nd_repeats_add": (
        lambda x: sl.scatter_nd([[1], [1], [3]], [5.0, 6.0, 7.0], [4]),
        lambda x: np.float32([0, 11, 0, 7]),
    ),
    "scatter_nd_slices": (
        lambda x: sl.scatter_nd([[0, 1]], [[1.0, 2.0]], [2, 2, 2]),
        lambda x: np.float32([[[0, 0], [1, 2]], [[0, 0], [0, 0]]]),
    ),
    "tensor_scatter_nd_update": (
        lambda x: sl.tensor_scatter_nd_update(x, [[0, 1], [2, 3]], [7.0, 8.0]),
        lambda x: _np_scatter(x, [(0, 1), (2, 3)], [7.0, 8.0], "set"),
    ),
    "tensor_scatter_nd_add_rows": (
        lambda x: sl.tensor_scatter_nd_add(x, [[1], [1]], np.ones((2, 4))),
        lambda x: _np_scatter(x, [(1,), (1,)], np.ones((2, 4)), "add"),
    ),
    "tensor_scatter_nd_sub": (
        lambda x: sl.tensor_scatter_nd_sub(x, [[2, 0]], [1.0]),
        lambda x: _np_scatter(x, [(2, 0)], [-1.0], "add"),
    ),
    "top_k_values": (lambda x: sl.nn.top_k(x[:, ::-1], 2).values, lambda x: -np.sort(-x, 1)[:, :2]),
    "top_k_indices": (
        lambda x: sl.nn.top_k([[1.0, 3.0, 3.0, 2.0]], 3).indices,
        lambda x: np.int32([[1, 2, 3]]),
    ),
    "in_top_k": (
        lambda x: sl.nn.in_top_k(
            np.float32([[0.1, 0.5, 0.5], [0.9, 0.05, 0.05], [np.nan, 1.0, 0.0]]), [2, 1, 1], 1
        ),
        lambda x: np.array([True, False, False]),
    ),
    "in_top_k_out_of_range_target": (
        lambda x: sl.nn.in_top_k(np.float32([[0.1, 0.5]]), [7], 2),
        lambda x: np.array([False]),
    ),
    "sort_ascending": (
        lambda x: sl.sort(x[:, ::-1] * [1, -1, 1, -1]),
        lambda x: np.sort(x[:, ::-1] * [1, -1, 1, -1], -1),
    ),
    "sort_descending_axis0": (
        lambda x: sl.sort(x * [1, -1, 1, -1], axis=0, direction="DESCENDING"),
        lambda x: -np.sort(-x * [1, -1, 1, -1], 0),
    ),
    "argsort_stable": (
        lambda x: sl.argsort(np.array([3, 1, 2, 1])),
        lambda x: np.int32([1, 3, 2, 0]),
    ),
    "argsort_descending": (
        lambda x: sl.argsort(np.array([3.0, 1.0, 2.0]), direction="DESCENDING"),
        lambda x: np.int32([0, 2, 1]),
    ),
    "segment_sum": (lambda x: sl.segment_sum(x, IDS), lambda x: _np_segments(x, IDS, 3, np.sum, 0)),
    "segment_mean": (
        lambda x: sl.segment_mean(x, IDS),
        lambda x: _np_segments(x, IDS, 3, np.mean, 0),
    ),
    "segment_max": (lambda x: sl.segment_max(x, IDS), lambda x: _np_segments(x, IDS, 3, np.max, 0)),
    "segment_min": (lambda x: sl.segment_min(x, IDS), lambda x: _np_segments(x, IDS, 3, np.min, 0)),
    "segment_prod": (
        lambda x: sl.segment_prod(x, IDS),
        lambda x: _np_segments(x, IDS, 3, np.prod, 1),
    ),
    "unsorted_segment_max": (
        lambda x: sl.unsorted_segment_max(x, UIDS, 4),
        lambda x: _np_segments(x, UIDS, 4, np.max, LOWEST),
    ),
    "unsorted_segment_min": (
        lambda x: sl.unsorted_segment_min(x, UIDS, 3),
        lambda x: _np_segments(x, UIDS, 3, np.min, -LOWEST),
    ),
    "unsorted_segment_prod": (
        lambda x: sl.unsorted_segment_prod(x, UIDS, 3),
        lambda x: _np_segments(x, UIDS, 3, np.prod, 1),
    ),
    "unsorted_segment_mean": (
        lambda x: sl.unsorted_segment_mean(x, UIDS, 3),
        lambda x: _np_segments(x, UIDS, 3, np.mean, 0),
    ),
    "unsorted_segment_max_int": (
        lambda x: sl.unsorted_segment_max([1, 5, 2], [0, 0, 2], 3),
        lambda x: np.int32([5, np.iinfo(np.int32).min, 2]),
    ),
    "parallel_stack": (lambda x: sl.parallel_stack([x[0], x[1]]), lambda x: x[:2]),
    "lin_space": (
        lambda x: sl.lin_space(-1.0, 1.0, 5),
        lambda x: np.linspace(-1, 1, 5, dtype="f4"),
    ),
    "linspace_one": (lambda x: sl.linspace(2.0, 3.0, 1), lambda x: np.float32([2.0])),
    "eye_square": (lambda x: sl.eye(3), lambda x: np.eye(3, dtype="f4")),
    "eye_tensor_sizes": (
        lambda x: sl.eye(sl.constant(2), sl.constant(3), dtype=sl.float64),
        lambda x: np.eye(2, 3),
    ),
    "eye_batch_rect": (
        lambda x: sl.eye(2, 3, batch_shape=[2], dtype=sl.float64),
        lambda x: np.broadcast_to(np.eye(2, 3), (2, 2, 3)),
    ),
    "diag": (
        lambda x: sl.diag(np.array([[1, 2], [3, 4]])),
        lambda x: np.diag([1, 2, 3, 4]).reshape(2, 2, 2, 2),
    ),
    "diag_part": (
        lambda x: sl.diag_part(np.arange(16).reshape(2, 2, 2, 2)),
        lambda x: np.array([[0, 5], [10, 15]]),
    ),
    "matrix_diag": (
        lambda x: sl.matrix_diag(x[:2, :3]),
        lambda x: np.stack([np.diag(r) for r in x[:2, :3]]),
    ),
    "matrix_diag_part": (lambda x: sl.matrix_diag_part(x), lambda x: np.diagonal(x)),
    "matrix_set_diag": (
        lambda x: sl.matrix_set_diag(x, [7.0, 8.0, 9.0]),
        lambda x: np.where(np.eye(3, 4, dtype=bool), np.array([7.0, 8.0, 9.0])[:, None], x),
    ),
    "matrix_band_part_lower": (lambda x: sl.matrix_band_part(x, -1, 0), lambda x: np.tril(x)),
    "matrix_band_part_band": (
        lambda x: sl.matrix_band_part(x, 1, 1),
        lambda x: np.triu(np.tril(x, 1), -1),
    ),
    "matrix_transpose": (
        lambda x: sl.matrix_transpose(np.ones((2, 3, 4))),
        lambda x: np.ones((2, 4, 3)),
    ),
    "trace": (
        lambda x: sl.trace(sl.stack([x, 2 * x])),
        lambda x: np.array([1.0, 2.0]) * np.trace(x),
    ),
    "space_to_depth": (lambda x: sl.space_to_depth(IMG, 2), lambda x: _np_space_to_depth(IMG, 2)),
    "depth_to_space": (lambda x: sl.depth_to_space(_np_space_to_depth(IMG, 2), 2), lambda x: IMG),
}


@pytest.fixture(scope="module")
def computed():
    return value_table_runner(VALUES, X)


@pytest.mark.parametrize("engine", VALUE_ENGINES)
@pytest.mark.parametrize("name", sorted(VALUES))
def test_values_match_numpy(computed, name, engine):
    check_value(computed(engine)[name], VALUES[name][1](X))


@pytest.mark.parametrize("engine", ENGINES)
def test_returned_structures(engine):
    top = sl.nn.top_k([[1.0, 3.0, 2.0]], k=2)
    unique = sl.unique([1, 1, 2, 4, 4, 4, 7, 8, 8])
    counted = sl.unique_with_counts(np.array([3, 1, 3], np.int64), out_idx=sl.int64)
    shapes = sl.shape_n([sl.zeros([2, 3]), sl.zeros([4])], out_type=sl.int64)
    grids = sl.meshgrid([1, 2, 3], [4, 5])
    grids_ij = sl.meshgrid([1, 2, 3], [4, 5], indexing="ij")
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        got_top, got_unique, got_counted, got_shapes, got_grids, got_ij = sess.run(
            [top, unique, counted, shapes, grids, grids_ij]
        )
    assert type(got_top).__name__ == "TopKOutput" and got_top._fields == ("values", "indices")
    assert got_top.indices.dtype == np.int32
    np.testing.assert_array_equal(got_top.values, [[3.0, 2.0]])
    assert got_unique._fields == ("y", "idx")
    np.testing.assert_array_equal(got_unique.y, [1, 2, 4, 7, 8])
    np.testing.assert_array_equal(got_unique.idx, [0, 0, 1, 2, 2, 2, 3, 4, 4])
    assert got_counted._fields == ("y", "idx", "count")
    assert got_counted.idx.dtype == np.int64
    np.testing.assert_array_equal(got_counted.y, [3, 1])
    np.testing.assert_array_equal(got_counted.count, [2, 1])
    assert isinstance(got_shapes, list) and got_shapes[0].dtype == np.int64
    np.testing.assert_array_equal(got_shapes[1], [4])
    want_xy = np.meshgrid([1, 2, 3], [4, 5])
    want_ij = np.meshgrid([1, 2, 3], [4, 5], indexing="ij")
    for got, want in zip(got_grids + got_ij, want_xy + want_ij):
        np.testing.assert_array_equal(got, want)


def test_static_shapes():
    x = sl.placeholder(sl.float32, [None, 5])
    assert sl.nn.top_k(x, 3).indices.shape.as_list() == [None, 3]
    assert sl.gather_nd(sl.zeros([4, 5, 6]), sl.zeros([7, 2], sl.int32)).shape.as_list() == [7, 6]
    assert sl.sequence_mask(sl.placeholder(sl.int32, [3]), 6).shape.as_list() == [3, 6]
    assert sl.reverse_sequence(x, [1, 2], 1).shape.as_list() == [2, 5]
    assert sl.segment_sum(x, sl.placeholder(sl.int32, [None])).shape.as_list() == [None, 5]
    assert sl.segment_sum(sl.zeros([3, 2]), [0, 1, 1]).shape.as_list() == [2, 2]
    assert sl.matrix_diag_part(sl.zeros([2, 3, 5])).shape.as_list() == [2, 3]
    images = sl.placeholder(sl.float32, [None, 4, 6, 3])
    assert sl.space_to_depth(images, 2).shape.as_list() == [None, 2, 3, 12]
    assert sl.unique(sl.placeholder(sl.int32, [None])).y.shape.as_list() == [None]


def test_fed_inputs_run_in_the_interpreted_engine():
    """unique and segment_sum read their (fed) ids as values: the interpreted engine runs them;
    the compiled engine says it cannot, as it does for boolean_mask."""
    x = sl.placeholder(sl.int32, [None])
    y, idx = sl.unique(x)
    total = sl.segment_sum(sl.ones_like(x), x)
    with sl.Session(config=sl.SessionConfig(engine="interpreted")) as sess:
        got_y, got_total = sess.run([y, total], {x: [0, 0, 2, 2, 2]})
    np.testing.assert_array_equal(got_y, [0, 2])
    np.testing.assert_array_equal(got_total, [2, 0, 3])
    with sl.Session(config=sl.SessionConfig(engine="compiled")) as sess:
        with pytest.raises(sl.errors.UnimplementedError, match="Unique"):
            sess.run(y, {x: [1, 2]})


@pytest.mark.parametrize("engine", ENGINES)
def test_run_time_errors(engine):
    """Values known only at run time are checked when the op runs, as TF's CPU kernels do."""
    ids = sl.placeholder(sl.int32, [None])
    lengths = sl.placeholder(sl.int32, [2])
    index = sl.placeholder(sl.int32, [1, 2])
    reversed_ = sl.reverse_sequence(sl.zeros([2, 3]), lengths, seq_axis=1)
    gathered = sl.gather_nd(sl.zeros([2, 3]), index)
    scattered = sl.scatter_nd(index, [1.0], [2, 3])
    with sl.Session(config=sl.SessionConfig(engine="interpreted")) as sess:
        with pytest.raises(sl.errors.InvalidArgumentError, match="sorted"):
            sess.run(sl.segment_sum(sl.ones([3]), ids), {ids: [1, 0, 2]})
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        with pytest.raises(sl.errors.InvalidArgumentError, match="seq_lengths"):
            sess.run(reversed_, {lengths: [1, 4]})
        for fetch in (gathered, scattered):
            with pytest.raises(sl.errors.InvalidArgumentError, match="out of range"):
                sess.run(fetch, {index: [[1, 3]]})
        np.testing.assert_array_equal(sess.run(scattered, {index: [[1, 2]]})[1], [0, 0, 1])


@pytest.mark.parametrize("engine", ENGINES)
def test_scatter_nd_on_variables(engine):
    v = sl.Variable(np.zeros((2, 2)))
    update = sl.scatter_nd_update(v, [[0, 1], [1, 0]], [5.0, 6.0])
    add = sl.scatter_nd_add(v, [[1, 0], [1, 0]], [1.0, 2.0])
    sub = sl.scatter_nd_sub(v, [[0]], [[1.0, 1.0]])
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(update), [[0.0, 5.0], [6.0, 0.0]])
        np.testing.assert_array_equal(sess.run(add), [[0.0, 5.0], [9.0, 0.0]])
        np.testing.assert_array_equal(sess.run(sub), [[-1.0, 4.0], [9.0, 0.0]])
    with pytest.raises(TypeError, match="sl.Variable"):
        sl.scatter_nd_add(sl.zeros([2]), [[0]], [1.0])


# -- errors at graph construction, with TF's types ------------------------------------------------
ERRORS = {  # name: (build, exception type, message pattern)
    "sequence_mask_maxlen_vector": (lambda: sl.sequence_mask([1, 2], [3, 4]), ValueError, "scalar"),
    "reverse_sequence_same_axes": (
        lambda: sl.reverse_sequence(X, [1, 1, 1], 0, 0),
        ValueError,
        "differ",
    ),
    "reverse_sequence_lengths_size": (
        lambda: sl.reverse_sequence(X, [1, 2], 1, 0),
        ValueError,
        "seq_lengths",
    ),
    "reverse_sequence_too_long": (
        lambda: sl.reverse_sequence(X, [1, 2, 9], 1, 0),
        ValueError,
        "more than",
    ),
    "reverse_sequence_float_lengths": (
        lambda: sl.reverse_sequence(X, [1.0, 2.0, 1.0], 1),
        TypeError,
        "int32 or int64",
    ),
    "gather_nd_float_indices": (lambda: sl.gather_nd(X, [[0.0]]), TypeError, "int32 or int64"),
    "gather_nd_tuple_too_long": (lambda: sl.gather_nd(X, [[0, 0, 0]]), ValueError, "rank"),
    "gather_nd_out_of_range": (lambda: sl.gather_nd(X, [[3, 0]]), ValueError, "not in"),
    "scatter_nd_updates_shape": (
        lambda: sl.scatter_nd([[0], [1]], [1.0, 2.0, 3.0], [4]),
        ValueError,
        "updates",
    ),
    "scatter_nd_out_of_range": (lambda: sl.scatter_nd([[4]], [1.0], [4]), ValueError, "not in"),
    "tensor_scatter_updates_shape": (
        lambda: sl.tensor_scatter_nd_update(X, [[0]], [1.0]),
        ValueError,
        "updates",
    ),
    "tensor_scatter_dtype": (
        lambda: sl.tensor_scatter_nd_add(X, [[0, 0]], sl.constant([1])),
        TypeError,
        "dtype",
    ),
    "unique_matrix": (lambda: sl.unique([[1, 2]]), ValueError, "rank"),
    "top_k_too_large": (lambda: sl.nn.top_k([1.0, 2.0], 3), ValueError, "at least"),
    "top_k_negative": (lambda: sl.nn.top_k([1.0, 2.0], -1), ValueError, "non-negative"),
    "top_k_scalar": (lambda: sl.nn.top_k(1.0, 1), ValueError, "rank"),
    "in_top_k_float64": (lambda: sl.nn.in_top_k(np.zeros((2, 3)), [0, 1], 1), TypeError, "float32"),
    "in_top_k_targets_size": (
        lambda: sl.nn.in_top_k(np.float32(np.zeros((2, 3))), [0], 1),
        ValueError,
        "targets",
    ),
    "sort_direction": (lambda: sl.sort([1.0], direction="UP"), ValueError, "direction"),
    "sort_axis": (lambda: sl.sort([1.0], axis=1), ValueError, "axis"),
    "segment_ids_unsorted": (lambda: sl.segment_sum(X, [1, 0, 2]), ValueError, "sorted"),
    "segment_ids_size": (lambda: sl.segment_sum(X, [0, 1]), ValueError, "one id per row"),
    "unsorted_max_complex": (
        lambda: sl.unsorted_segment_max(np.ones(2, np.complex64), [0, 1], 2),
        TypeError,
        "real",
    ),
    "unsorted_ids_too_large": (
        lambda: sl.unsorted_segment_min(X, [0, 1, 5], 3),
        ValueError,
        "num_segments",
    ),
    "parallel_stack_unknown": (
        lambda: sl.parallel_stack([sl.placeholder(sl.float32, [None])]),
        ValueError,
        "fully defined",
    ),
    "meshgrid_indexing": (lambda: sl.meshgrid([1], [2], indexing="xz"), ValueError, "indexing"),
    "lin_space_num": (lambda: sl.lin_space(0.0, 1.0, 0), ValueError, "positive"),
    "lin_space_int": (lambda: sl.lin_space(0, 1, 3), TypeError, "floating"),
    "diag_part_odd_rank": (lambda: sl.diag_part(np.zeros((2, 2, 2))), ValueError, "even rank"),
    "diag_part_mismatch": (lambda: sl.diag_part(np.zeros((2, 3))), ValueError, "D \\+ D"),
    "matrix_diag_part_vector": (lambda: sl.matrix_diag_part([1.0]), ValueError, "rank >= 2"),
    "matrix_set_diag_length": (lambda: sl.matrix_set_diag(X, [1.0, 2.0]), ValueError, "diagonal"),
    "matrix_band_part_float_bound": (
        lambda: sl.matrix_band_part(X, 1.0, 0),
        TypeError,
        "num_lower",
    ),
    "matrix_transpose_vector": (lambda: sl.matrix_transpose([1.0]), ValueError, "rank >= 2"),
    "space_to_depth_indivisible": (
        lambda: sl.space_to_depth(np.zeros((1, 3, 4, 1)), 2),
        ValueError,
        "divisible",
    ),
    "space_to_depth_block": (lambda: sl.space_to_depth(IMG, 1), ValueError, "at least 2"),
    "depth_to_space_depth": (lambda: sl.depth_to_space(IMG, 2), ValueError, "divisible"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_at_graph_construction(name):
    build, error, pattern = ERRORS[name]
    with pytest.raises(error, match=pattern):
        build()


# -- gradients ------------------------------------------------------------------------------------
def _distinct(shape):
    """float64 values without ties (so max, min, top_k and sort are differentiable)."""
    return RNG.permutation(np.prod(shape)).reshape(shape) * 0.37 - 1.1


GRADIENTS = {  # name: (build from placeholders, inputs)
    "reverse_sequence": (
        lambda x: sl.reverse_sequence(x, [3, 1], seq_axis=1, batch_axis=0),
        [_distinct((2, 3))],
    ),
    "gather_nd": (lambda x: sl.gather_nd(x, [[1, 0], [1, 0], [0, 2]]), [_distinct((2, 3))]),
    "scatter_nd": (lambda u: sl.scatter_nd([[1], [1], [0]], u, [3, 2]), [_distinct((3, 2))]),
    "tensor_scatter_nd_update": (
        lambda x, u: sl.tensor_scatter_nd_update(x, [[1], [0]], u),
        [_distinct((3, 2)), _distinct((2, 2))],
    ),
    "tensor_scatter_nd_add": (
        lambda x, u: sl.tensor_scatter_nd_add(x, [[1, 1], [1, 1]], u),
        [_distinct((2, 2)), _distinct((2,))],
    ),
    "tensor_scatter_nd_sub": (
        lambda x, u: sl.tensor_scatter_nd_sub(x, [[0, 1]], u),
        [_distinct((2, 2)), _distinct((1,))],
    ),
    "top_k": (lambda x: sl.nn.top_k(x, 2).values, [_distinct((2, 4))]),
    "sort_axis0": (lambda x: sl.sort(x, axis=0), [_distinct((3, 2))]),
    "segment_sum": (lambda x: sl.segment_sum(x, [0, 0, 2]), [_distinct((3, 2))]),
    "segment_mean": (lambda x: sl.segment_mean(x, [0, 0, 1]), [_distinct((3, 2))]),
    "segment_max": (lambda x: sl.segment_max(x, [0, 0, 1]), [_distinct((3, 2))]),
    "segment_min": (lambda x: sl.segment_min(x, [0, 1, 1]), [_distinct((3, 2))]),
    "segment_prod": (lambda x: sl.segment_prod(x, [0, 0, 1]), [_distinct((3, 2))]),
    "unsorted_segment_max": (
        lambda x: sl.unsorted_segment_max(x, [1, -1, 0], 2),
        [_distinct((3, 2))],
    ),
    "unsorted_segment_min": (
        lambda x: sl.unsorted_segment_min(x, [0, 1, 0], 2),
        [_distinct((3, 2))],
    ),
    "unsorted_segment_prod": (
        lambda x: sl.unsorted_segment_prod(x, [0, 1, 0], 2),
        [_distinct((3, 2))],
    ),
    "unsorted_segment_mean": (
        lambda x: sl.unsorted_segment_mean(x, [0, 1, 0], 2),
        [_distinct((3, 2))],
    ),
    "meshgrid": (
        lambda a, b: sl.meshgrid(a, b)[0] * sl.meshgrid(a, b)[1],
        [_distinct((3,)), _distinct((2,))],
    ),
    "diag": (sl.diag, [_distinct((3,))]),
    "diag_part": (sl.diag_part, [_distinct((2, 2))]),
    "matrix_diag": (sl.matrix_diag, [_distinct((2, 2))]),
    "matrix_diag_part_rect": (sl.matrix_diag_part, [_distinct((2, 3))]),
    "matrix_set_diag": (sl.matrix_set_diag, [_distinct((2, 3)), _distinct((2,))]),
    "matrix_band_part": (lambda x: sl.matrix_band_part(x, 0, 1), [_distinct((3, 3))]),
    "trace": (sl.trace, [_distinct((2, 2))]),
    "space_to_depth": (lambda x: sl.space_to_depth(x, 2), [_distinct((1, 2, 2, 2))]),
    "depth_to_space": (lambda x: sl.depth_to_space(x, 2), [_distinct((1, 1, 2, 4))]),
}


@pytest.fixture(scope="module")
def gradient_results():
    return gradient_table_runner(GRADIENTS)


@pytest.mark.parametrize("engine", VALUE_ENGINES)
@pytest.mark.parametrize("name", sorted(GRADIENTS))
def test_gradients_match_central_differences(gradient_results, name, engine):
    check_gradient_case(gradient_results(engine)[name])


@pytest.mark.parametrize("engine", ENGINES)
def test_segment_gradient_ties_and_zeros(engine):
    """What differences cannot check: ties share a max's gradient; a product with one zero
    sends the other entries' product to it; two zeros give zero gradients (TF1's rules)."""
    data = sl.constant([[2.0], [2.0], [1.0]])
    (d_max,) = gradients(sl.reduce_sum(sl.segment_max(data, [0, 0, 1])), [data])
    zeros = sl.constant([0.0, 3.0, 0.0, 0.0, 5.0])
    ids = sl.constant([0, 0, 1, 1, 2])
    (d_prod,) = gradients(sl.reduce_sum(sl.unsorted_segment_prod(zeros, ids, 3)), [zeros])
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        got_max, got_prod = sess.run([d_max, d_prod])
    np.testing.assert_array_equal(got_max, [[0.5], [0.5], [1.0]])
    np.testing.assert_array_equal(got_prod, [3.0, 0.0, 0.0, 0.0, 1.0])


def test_ops_without_gradients():
    x = sl.constant([1.0, 2.0])
    assert gradients(sl.reduce_sum(sl.lin_space(x[0], x[1], 3)), [x]) == [None]
    assert gradients(sl.reduce_sum(sl.cast(sl.nn.top_k(x, 1).indices, sl.float32)), [x]) == [None]
