"""Concrete tensors: a graph tensor made only from constants has a value without a session
(`.numpy()`, `np.asarray`, `float`, `int`, `len`, iteration, the repr), while TF1 programs run
it in a session exactly as before and everything that depends on a run stays symbolic."""

import numpy as np
import pytest

import sluice as sl
from sluice.framework.ir import concrete

X = np.arange(6, dtype=np.float32).reshape(2, 3)


def test_tf1_functions_on_arrays_give_tensors_with_values():
    e = sl.expand_dims(X, 0)
    assert isinstance(e, sl.Tensor) and e.shape == (1, 2, 3)
    np.testing.assert_array_equal(e.numpy(), X[None])
    joined = sl.concat([X, X + 1], axis=1)
    np.testing.assert_array_equal(np.asarray(joined), np.concatenate([X, X + 1], 1))
    mean = sl.reduce_mean(sl.constant(X), axis=1)
    np.testing.assert_allclose(mean.numpy(), X.mean(1))
    assert float(sl.reduce_sum(X)) == 15.0 and int(sl.reduce_max(sl.constant([3, 7]))) == 7
    assert type(sl.constant(2.5).numpy()) is np.float32  # a scalar, as TF's numpy()
    assert len(e) == 1 and [float(t) for t in sl.constant([1.0, 2.0])] == [1.0, 2.0]
    assert list(range(sl.constant(3))) == [0, 1, 2]  # an int scalar is an index
    with sl.Session() as sess:  # the same tensors run in a session, unchanged
        got = sess.run([e, joined, mean])
    np.testing.assert_array_equal(got[0], X[None])
    np.testing.assert_allclose(got[2], X.mean(1))
    with sl.Session() as sess:  # and a concrete tensor may still be fed (TF1's rule)
        assert sess.run(mean * 2, {mean: np.ones(2, np.float32)}).tolist() == [2.0, 2.0]


def test_the_repr_shows_the_value_of_a_concrete_tensor_only():
    assert "numpy=array([1., 2.], dtype=float32)" in repr(sl.constant([1.0, 2.0]))
    p = sl.placeholder(sl.float32, [2])
    assert "numpy" not in repr(p * 2)
    assert "numpy" not in repr(sl.zeros([2000]))  # large values are not computed for a repr


def test_the_dtype_is_the_tensors_even_for_64_bit_types():
    value = (sl.constant(np.float64(1) / 3) * 3).numpy()
    assert value.dtype == np.float64 and value == 1.0
    assert sl.cast(sl.constant(2**40, sl.int64) + 1, sl.int64).numpy() == 2**40 + 1


def test_a_shape_known_statically_is_concrete_whatever_its_tensor():
    p = sl.placeholder(sl.float32, [2, 5])
    shape_op = sl.get_default_graph().create_op("Shape", [p], {"out_type": sl.int32}).outputs[0]
    assert shape_op.numpy().tolist() == [2, 5]
    assert int(sl.reduce_prod(shape_op)) == 10


@pytest.mark.parametrize(
    "make, names",
    [
        (lambda: sl.placeholder(sl.float32, [2]) * 2, "Placeholder"),
        (lambda: sl.placeholder_with_default(1.0, []) + 1, "PlaceholderWithDefault"),
        (lambda: sl.Variable(1.0).value() + 1, "stateful op"),
        (lambda: sl.random_normal([2], seed=1), "stateful op"),
        (
            lambda: sl.cond(sl.constant(True), lambda: sl.constant(1.0), lambda: 2.0),
            "cond or while",
        ),
        (lambda: sl.while_loop(lambda i: i < 3, lambda i: i + 1, [0]), "cond or while"),
    ],
    ids=["feed", "feed_with_default", "variable", "random", "cond", "while"],
)
def test_what_depends_on_a_run_has_no_value(make, names):
    t = make()
    assert not concrete.is_concrete(t)
    for get in (lambda: t.numpy(), lambda: np.asarray(t), lambda: float(t)):
        with pytest.raises(TypeError, match=names):
            get()


def test_control_inputs_make_a_tensor_symbolic():
    v = sl.Variable(0.0)
    with sl.control_dependencies([v.assign(1.0)]):
        t = sl.constant(1.0) + 1
    with pytest.raises(TypeError, match="control inputs"):
        t.numpy()


def test_stateless_random_draws_with_seeds_are_concrete():
    a = sl.random.stateless_normal([3], seed=[1, 2])
    b = sl.random.stateless_normal([3], seed=[1, 2])
    assert concrete.is_concrete(a)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    with sl.Session() as sess:
        np.testing.assert_allclose(sess.run(a), a.numpy(), rtol=1e-6)


def test_bool_keeps_tf1s_rule_and_index_needs_integers():
    with pytest.raises(TypeError, match="Python bool"):
        bool(sl.constant(True))
    with pytest.raises(TypeError, match="cannot be used as an index"):
        [1, 2][sl.constant(1.0)]
    with pytest.raises(TypeError, match="one element"):
        float(sl.constant([1.0, 2.0]))


def test_the_value_is_computed_once_and_a_long_chain_does_not_recurse():
    t = sl.constant(0.0)
    for _ in range(1500):  # deeper than Python's recursion limit
        t = t + 1.0
    assert float(t) == 1500.0
    assert concrete.concrete_value(t) is concrete.concrete_value(t)
    kept = np.asarray(t)
    kept += 1  # the caller's copy
    assert float(t) == 1500.0
    with pytest.raises(ValueError):
        np.asarray(t, copy=False)[...] = 0  # the kept value itself is read-only
