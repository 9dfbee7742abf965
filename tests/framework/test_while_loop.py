"""sl.while_loop: the whitepaper's examples, nesting, structures, invariants, errors."""

import collections

import numpy as np
import pytest

import sluice as sl


def run(fetches, feeds=None):
    with sl.Session() as s:
        return s.run(fetches, feeds)


def test_whitepaper_count_to_ten():
    r = sl.while_loop(lambda i: i < 10, lambda i: i + 1, [sl.constant(0)])
    assert run(r) == 10


def test_whitepaper_doubling():
    r = sl.while_loop(lambda i: i < 16, lambda i: i * 2, [sl.constant(4)])
    assert run(r) == 16


@pytest.mark.parametrize("n, expected", [(0, 0), (1, 1), (7, 7)])
def test_zero_one_and_many_iterations(n, expected):
    limit = sl.placeholder(sl.int32, [])
    r = sl.while_loop(lambda i: i < limit, lambda i: i + 1, [sl.constant(0)])
    assert run(r, {limit: n}) == expected


def test_tuple_loop_vars_and_loop_constants():
    a = sl.constant(2.0)
    i, x = sl.while_loop(
        lambda i, x: i < 5, lambda i, x: (i + 1, x * a), (sl.constant(0), sl.constant(1.0))
    )
    assert run([i, x]) == [5, 32.0]


def test_namedtuple_and_dict_loop_vars():
    State = collections.namedtuple("State", "c h")
    out = sl.while_loop(
        lambda s: s["i"] < 3,
        lambda s: {"i": s["i"] + 1, "state": State(s["state"].c + 1.0, s["state"].h * 2.0)},
        [{"i": sl.constant(0), "state": State(sl.constant(0.0), sl.constant(1.0))}],
        return_same_structure=True,
    )
    r = run(out)
    assert isinstance(r[0]["state"], State)
    assert r[0]["i"] == 3 and r[0]["state"].c == 3.0 and r[0]["state"].h == 8.0


def test_nested_loops():
    # sum_{i<4} sum_{j<i} 1 = 0+1+2+3 = 6
    def outer_body(i, total):
        inner = sl.while_loop(
            lambda j, t: j < i, lambda j, t: (j + 1, t + 1), (sl.constant(0), total)
        )
        return i + 1, inner[1]

    i, total = sl.while_loop(lambda i, t: i < 4, outer_body, (sl.constant(0), sl.constant(0)))
    assert run([i, total]) == [4, 6]


def test_nested_loops_have_unique_frame_names():
    def outer_body(i):
        sl.while_loop(lambda j: j < 2, lambda j: j + 1, [sl.constant(0)])
        return i + 1

    sl.while_loop(lambda i: i < 2, outer_body, [sl.constant(0)])
    sl.while_loop(lambda i: i < 2, lambda i: i + 1, [sl.constant(0)])
    frames = {
        op.get_attr("frame_name")
        for op in sl.get_default_graph().get_operations()
        if op.type == "Enter"
    }
    assert frames == {"while", "while/while", "while_1"}


def test_cond_inside_while():
    # Collatz steps from 6: 6 3 10 5 16 8 4 2 1 -> 8 steps
    def body(n, steps):
        n = sl.cond(sl.equal(n % 2, 0), lambda: n // 2, lambda: 3 * n + 1)
        return n, steps + 1

    n, steps = sl.while_loop(lambda n, s: n > 1, body, (sl.constant(6), sl.constant(0)))
    assert run([n, steps]) == [1, 8]


def test_while_inside_cond():
    p = sl.placeholder(sl.bool, [])
    out = sl.cond(
        p,
        lambda: sl.while_loop(lambda i: i < 10, lambda i: i + 3, [sl.constant(0)]),
        lambda: sl.constant(-1),
    )
    assert run(out, {p: True}) == 12
    assert run(out, {p: False}) == -1


def test_maximum_iterations():
    r = sl.while_loop(lambda i: i < 100, lambda i: i + 1, [sl.constant(0)], maximum_iterations=7)
    assert run(r) == 7
    r2 = sl.while_loop(lambda i: i < 3, lambda i: i + 1, [sl.constant(0)], maximum_iterations=7)
    assert run(r2) == 3


@pytest.mark.parametrize("parallel_iterations", [1, 2, 10])
def test_parallel_iterations_do_not_change_results(parallel_iterations):
    xs = sl.constant(np.arange(12, dtype=np.float32))

    def body(i, acc):
        return i + 1, acc + sl.gather(xs, i) * sl.cast(i, sl.float32)

    _, acc = sl.while_loop(
        lambda i, acc: i < 12,
        body,
        (sl.constant(0), sl.constant(0.0)),
        parallel_iterations=parallel_iterations,
    )
    assert run(acc) == pytest.approx(float(np.sum(np.arange(12) ** 2)))


def test_body_returning_a_loop_constant_still_terminates():
    c = sl.constant(5.0)
    i, x = sl.while_loop(
        lambda i, x: i < 3, lambda i, x: (i + 1, c), (sl.constant(0), sl.constant(0.0))
    )
    assert run([i, x]) == [3, 5.0]


def test_hundred_thousand_iterations():
    r = sl.while_loop(lambda i: i < 100000, lambda i: i + 1, [sl.constant(0)])
    assert run(r) == 100000


def test_shape_invariants_allow_a_growing_loop_variable():
    x0 = sl.constant(np.zeros([1], np.float32))
    i, x = sl.while_loop(
        lambda i, x: i < 3,
        lambda i, x: (i + 1, sl.concat([x, sl.ones([1])], 0)),
        (sl.constant(0), x0),
        shape_invariants=(sl.TensorShape([]), sl.TensorShape([None])),
    )
    assert x.shape.as_list() == [None]
    np.testing.assert_allclose(run(x), [0.0, 1.0, 1.0, 1.0])


def test_shape_change_without_invariant_is_an_error():
    x0 = sl.constant(np.zeros([1], np.float32))
    with pytest.raises(ValueError, match="shape_invariants"):
        sl.while_loop(lambda x: sl.constant(True), lambda x: sl.concat([x, x], 0), [x0])


def test_body_returning_another_structure_is_an_error():
    with pytest.raises(ValueError, match="same structure"):
        sl.while_loop(lambda i, j: i < 3, lambda i, j: (i + 1,), (sl.constant(0), sl.constant(0)))


def test_body_changing_dtype_is_an_error():
    with pytest.raises(TypeError, match="dtype"):
        sl.while_loop(lambda x: x < 3.0, lambda x: sl.cast(x, sl.float64), [sl.constant(0.0)])


def test_non_boolean_predicate_is_an_error():
    with pytest.raises(TypeError, match="bool"):
        sl.while_loop(lambda i: i, lambda i: i + 1, [sl.constant(0)])


def test_fetching_a_tensor_inside_the_loop_is_an_error():
    inside = []

    def body(i):
        inside.append(i * 2)
        return i + 1

    sl.while_loop(lambda i: i < 3, body, [sl.constant(0)])
    with sl.Session() as s, pytest.raises(ValueError, match="inside the while loop"):
        s.run(inside[0])


def test_variable_read_and_update_inside_a_loop():
    v = sl.Variable(0.0, name="acc")

    def body(i):
        with sl.control_dependencies([v.assign_add(sl.cast(i, sl.float32))]):
            return i + 1

    r = sl.while_loop(lambda i: i < 5, body, [sl.constant(0)], parallel_iterations=1)
    with sl.Session() as s:
        s.run(sl.global_variables_initializer())
        assert s.run(r) == 5
        assert s.run(v) == 10.0


def test_control_dependency_from_outside_the_loop():
    v = sl.Variable(1.0, name="v")
    assign = v.assign(10.0)

    def body(i, x):
        with sl.control_dependencies([assign]):
            return i + 1, x + v.read_value()

    _, x = sl.while_loop(lambda i, x: i < 2, body, (sl.constant(0), sl.constant(0.0)))
    with sl.Session() as s:
        s.run(sl.global_variables_initializer())
        assert s.run(x) == 20.0


# -- IndexedSlices as loop variables (TF1's testWhileGrad_IndexedSlices) --------------------------
def test_indexed_slices_loop_variable_and_its_gradient():
    values = sl.constant([2.0, 4.0], name="values")
    indices = sl.constant([0, 3], name="indices")
    x = sl.IndexedSlices(values, indices, dense_shape=sl.constant([10], name="dense_shape"))

    def body(i, x):
        return [i + 1, sl.IndexedSlices(x.values * 2.0, x.indices, x.dense_shape)]

    _, r = sl.while_loop(lambda i, _: i < 10, body, [sl.constant(0), x])
    assert isinstance(r, sl.IndexedSlices)
    (dv,) = sl.gradients(r.values, values)
    got, got_dv = run([r, dv])
    np.testing.assert_allclose(got.values, [2048.0, 4096.0])
    assert got.indices.tolist() == [0, 3] and got.dense_shape.tolist() == [10]
    np.testing.assert_allclose(got_dv, [1024.0, 1024.0])


def test_indexed_slices_loop_variable_that_grows_under_a_shape_invariant():
    # TF1: the invariant given for an IndexedSlices is its values'; indices follow its first
    # dimension. No dense_shape here: the loop carries values and indices only.
    x = sl.IndexedSlices(sl.constant([[1.0, 1.0]]), sl.constant([0]))

    def body(i, x):
        return i + 1, sl.IndexedSlices(
            sl.concat([x.values, x.values * 2.0], 0), sl.concat([x.indices, x.indices + 1], 0)
        )

    _, r = sl.while_loop(
        lambda i, _: i < 2,
        body,
        [sl.constant(0), x],
        shape_invariants=[sl.TensorShape([]), sl.TensorShape([None, 2])],
    )
    assert r.dense_shape is None
    assert r.values.shape.as_list() == [None, 2] and r.indices.shape.as_list() == [None]
    got = run(r)
    np.testing.assert_allclose(got.values[:, 0], [1.0, 2.0, 2.0, 4.0])
    assert got.indices.tolist() == [0, 1, 1, 2]


@pytest.mark.filterwarnings("ignore:Converting sparse IndexedSlices")
def test_a_body_must_return_indexed_slices_for_an_indexed_slices_variable():
    x = sl.IndexedSlices(sl.constant([1.0]), sl.constant([0]), sl.constant([3]))
    with pytest.raises(ValueError, match="same structure"):
        sl.while_loop(lambda x: sl.constant(True), lambda x: sl.convert_to_tensor(x), [x])
    with pytest.raises(ValueError, match="same structure"):  # dense_shape dropped
        sl.while_loop(
            lambda x: sl.constant(True), lambda x: sl.IndexedSlices(x.values, x.indices), [x]
        )
