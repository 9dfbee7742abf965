"""sl.cond: the whitepaper's example, nesting, structures, errors."""

import collections

import numpy as np
import pytest

import sluice as sl
from sluice.framework.interpreter.plan import kernel_cache


@pytest.mark.parametrize("x_value, expected", [(1.0, 1.0 + 3.0), (6.0, 25.0)])
def test_whitepaper_example_both_outcomes(x_value, expected):
    # cond(x < y, x + z, square(y)) with y = 5, z = 3.
    x = sl.placeholder(sl.float32, [])
    y, z = sl.constant(5.0), sl.constant(3.0)
    out = sl.cond(x < y, lambda: sl.add(x, z), lambda: sl.square(y))
    with sl.Session() as s:
        assert s.run(out, {x: x_value}) == pytest.approx(expected)


def test_op_on_untaken_branch_never_runs_its_kernel():
    x = sl.placeholder(sl.float32, [64])  # large enough for the device kernel, not a host one
    p = sl.placeholder(sl.bool, [])
    ran = []

    def true_fn():
        y = x * 2.0
        original = y.op.op_def.kernel

        def spy(*args):
            ran.append(True)
            return original(*args)

        kernel_cache[y.op] = spy
        return y

    out = sl.cond(p, true_fn, lambda: x - 1.0)
    ones = np.ones(64, np.float32)
    # The interpreter skips the kernel; the compiled engine computes both branches and selects.
    with sl.Session(config=sl.SessionConfig(engine="interpreted")) as s:
        np.testing.assert_array_equal(s.run(out, {x: ones, p: False}), ones - 1.0)
        assert ran == []
        np.testing.assert_array_equal(s.run(out, {x: ones, p: True}), ones * 2.0)
        assert ran == [True]


def test_constants_created_inside_a_branch_are_conditional():
    p = sl.placeholder(sl.bool, [])
    out = sl.cond(p, lambda: sl.constant(1), lambda: sl.constant(2))
    with sl.Session() as s:
        assert s.run(out, {p: True}) == 1
        assert s.run(out, {p: False}) == 2


def test_nested_conds():
    x = sl.placeholder(sl.int32, [])

    def outer_true():
        return sl.cond(x > 10, lambda: x * 100, lambda: x * 10)

    out = sl.cond(x > 0, outer_true, lambda: -x)
    with sl.Session() as s:
        assert s.run(out, {x: 20}) == 2000
        assert s.run(out, {x: 5}) == 50
        assert s.run(out, {x: -4}) == 4


def test_nested_structures_of_outputs():
    Pair = collections.namedtuple("Pair", "a b")
    p = sl.placeholder(sl.bool, [])
    x = sl.constant([1.0, 2.0])
    out = sl.cond(
        p,
        lambda: {"pair": Pair(x * 2.0, sl.constant(1)), "list": [x]},
        lambda: {"pair": Pair(x * 3.0, sl.constant(2)), "list": [-x]},
    )
    with sl.Session() as s:
        r = s.run(out, {p: False})
    assert isinstance(r["pair"], Pair)
    np.testing.assert_allclose(r["pair"].a, [3.0, 6.0])
    assert r["pair"].b == 2
    np.testing.assert_allclose(r["list"][0], [-1.0, -2.0])


def test_branch_may_return_an_operation():
    v = sl.Variable(0, name="counter")
    p = sl.placeholder(sl.bool, [])
    op = sl.cond(p, lambda: v.assign_add(1).op, lambda: v.assign_sub(1).op)
    assert isinstance(op, sl.Operation)
    with sl.Session() as s:
        s.run(sl.global_variables_initializer())
        s.run(op, {p: True})
        s.run(op, {p: True})
        s.run(op, {p: False})
        assert s.run(v) == 1


def test_singleton_list_is_unpacked_unless_strict():
    p = sl.constant(True)
    assert isinstance(sl.cond(p, lambda: [sl.constant(1)], lambda: [sl.constant(2)]), sl.Tensor)
    strict = sl.cond(p, lambda: [sl.constant(1)], lambda: [sl.constant(2)], strict=True)
    assert isinstance(strict, list)


def test_each_captured_tensor_gets_its_own_switch_per_branch():
    x, y = sl.constant(1.0), sl.constant(2.0)
    sl.cond(sl.constant(True), lambda: x + y, lambda: x * y, name="c")
    switches = [op for op in sl.get_default_graph().get_operations() if op.type == "Switch"]
    # one for the predicate, then x and y in each of the two branches
    assert len(switches) == 5


def test_errors():
    x = sl.constant(1.0)
    with pytest.raises(TypeError, match="bool"):
        sl.cond(sl.constant(1), lambda: x, lambda: x)
    with pytest.raises(ValueError, match="scalar"):
        sl.cond(sl.constant([True, False]), lambda: x, lambda: x)
    with pytest.raises(ValueError, match="same structure"):
        sl.cond(sl.constant(True), lambda: (x, x), lambda: x)
    with pytest.raises(TypeError, match="dtype"):
        sl.cond(sl.constant(True), lambda: sl.constant(1), lambda: sl.constant(1.0))
    with pytest.raises(TypeError, match="callable"):
        sl.cond(sl.constant(True), x, lambda: x)


def test_fetching_the_untaken_branch_value_is_an_error():
    p = sl.placeholder(sl.bool, [])
    inside = []
    sl.cond(p, lambda: inside.append(sl.constant(1.0) * 2.0) or inside[0], lambda: sl.constant(0.0))
    with sl.Session() as s:
        assert s.run(inside[0], {p: True}) == 2.0
        with pytest.raises(sl.errors.InvalidArgumentError, match="dead"):
            s.run(inside[0], {p: False})


# -- IndexedSlices (TF1's testCondIndexedSlices, testCondIndexedSlicesDifferentTypes) -----------
@pytest.mark.parametrize("pred, expected", [(True, 11), (False, 9)])
def test_indexed_slices_through_cond(pred, expected):
    # TF1's test with [10] and [0]: a sluice IndexedSlices refuses scalar values.
    indices = sl.constant([0])
    x = sl.IndexedSlices(sl.constant([10]), indices)
    r = sl.cond(
        sl.constant(pred),
        lambda: sl.IndexedSlices(x.values + 1, indices),
        lambda: sl.IndexedSlices(x.values - 1, indices),
    )
    assert isinstance(r, sl.IndexedSlices) and r.dense_shape is None
    with sl.Session() as s:
        val, ind = s.run([r.values, r.indices])
    assert val.tolist() == [expected] and ind.tolist() == [0]


@pytest.mark.filterwarnings("ignore:Converting sparse IndexedSlices")
def test_indexed_slices_with_int32_and_int64_indices_merge_as_int64():
    values = sl.constant([10.0, 20.0])
    i_32, i_64 = sl.constant([0, 2], sl.int32), sl.constant([1, 2], sl.int64)
    shape = sl.constant([3])
    r = sl.cond(
        sl.placeholder_with_default(True, []),
        lambda: sl.IndexedSlices(values + 1.0, i_32, shape),
        lambda: sl.IndexedSlices(values - 1.0, i_64, shape),
    )
    assert r.indices.dtype == sl.int64
    (dx,) = sl.gradients(sl.reduce_sum(sl.convert_to_tensor(r) * [1.0, 2.0, 3.0]), values)
    with sl.Session() as s:
        got = s.run([r, sl.convert_to_tensor(r), dx])
        assert s.run(r.indices, {"PlaceholderWithDefault:0": False}).tolist() == [1, 2]
    assert got[0].indices.dtype == np.int64 and got[0].indices.tolist() == [0, 2]
    np.testing.assert_allclose(got[0].values, [11.0, 21.0])
    np.testing.assert_allclose(got[1], [11.0, 0.0, 21.0])
    np.testing.assert_allclose(got[2], [1.0, 3.0])


def test_indexed_slices_and_a_tensor_are_not_the_same_structure():
    x = sl.IndexedSlices(sl.constant([1.0]), sl.constant([0]), sl.constant([2]))
    with pytest.raises(ValueError, match="same structure"):
        sl.cond(sl.constant(True), lambda: x, lambda: sl.constant([1.0, 0.0]))


@pytest.mark.parametrize("pred", [True, False])
def test_switch_and_merge_of_indexed_slices(pred):
    from sluice.framework.ops.control.control_flow_ops import merge, switch

    p = sl.constant(pred)
    x = sl.IndexedSlices(sl.constant([[1.0, 2.0]]), sl.constant([1]), sl.constant([3, 2]))
    f, t = switch(x, p)
    assert isinstance(f, sl.IndexedSlices) and isinstance(t, sl.IndexedSlices)
    # merged with IndexedSlices, a Tensor is taken as IndexedSlices of all its rows (TF1)
    dense_f, _ = switch(sl.constant([[5.0, 6.0], [7.0, 8.0], [9.0, 10.0]]), p)
    m, index = merge([sl.IndexedSlices(t.values * 2.0, t.indices, t.dense_shape), dense_f])
    assert isinstance(m, sl.IndexedSlices)
    with sl.Session() as s:
        got, got_index = s.run([m, index])
    if pred:
        np.testing.assert_allclose(got.values, [[2.0, 4.0]])
        assert got.indices.tolist() == [1]
    else:
        np.testing.assert_allclose(got.values, [[5.0, 6.0], [7.0, 8.0], [9.0, 10.0]])
        assert got.indices.tolist() == [0, 1, 2]
    assert got.dense_shape.tolist() == [3, 2]
    assert got_index == (0 if pred else 1)
