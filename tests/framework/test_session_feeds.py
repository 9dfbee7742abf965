"""Session.run as TF1's: feeds converted to the tensor's dtype, nested feed_dict keys fed
element-wise, and a run that returns only when its step has run."""

import ast
import collections
import pathlib

import numpy as np
import pytest

import sluice as sl
from sluice._tf1.cells.lstm import LSTMStateTuple

ENGINES = ["compiled", "interpreted"]


def session(engine):
    return sl.Session(config=sl.SessionConfig(engine=engine))


# -- 1. feed values converted as np.asarray(value, dtype=<the tensor's dtype>) ------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_feeds_are_converted_to_the_tensors_dtype_as_numpy_converts(engine):
    labels = sl.placeholder(sl.int32, [None], name="labels")
    x = sl.placeholder(sl.float32, [None, 2], name="x")
    flag = sl.placeholder(sl.bool, [], name="flag")
    y = x + 1.0  # not a placeholder: fed, its dtype (float32) is the one converted to
    with session(engine) as sess:
        # float64 labels into int32 (a char-rnn sampler, a DCGAN): truncated, as NumPy and TF1
        out = sess.run(labels * 1, {labels: np.array([1.7, -1.5, 3.0])})
        assert out.dtype == np.int32 and out.tolist() == [1, -1, 3]
        out = sess.run(x * 2.0, {x: [[1, 2], [3, 4]]})  # a list of Python ints
        assert out.dtype == np.float32 and out.tolist() == [[2, 4], [6, 8]]
        out = sess.run(x * 2.0, {x: np.array([[0.5, 1.5]], np.float64)})
        assert out.dtype == np.float32 and out.tolist() == [[1.0, 3.0]]
        assert sess.run(y * 2.0, {y: np.array([[3, 4]], np.int64)}).tolist() == [[6.0, 8.0]]
        assert sess.run(sl.logical_not(flag), {flag: 0}) == np.True_
        assert sess.run(labels * 1, {labels: np.uint8(7)[None]}).tolist() == [7]


def test_unconvertible_feeds_are_errors_naming_the_tensor_and_dtypes():
    x = sl.placeholder(sl.float32, [None], name="inputs")
    labels = sl.placeholder(sl.int32, [None, 2], name="labels")
    with sl.Session() as sess:
        with pytest.raises(ValueError, match=r"'inputs:0' \(a Python list\).*float32"):
            sess.run(x, {x: ["a", "b"]})
        with pytest.raises(ValueError, match=r"'labels:0'.*int32.*inhomogeneous"):
            sess.run(labels, {labels: [[1, 2], [3]]})
        with pytest.raises(ValueError, match=r"Cannot feed value of shape \(3,\).*'labels:0'"):
            sess.run(labels, {labels: [1.0, 2.0, 3.0]})
        with pytest.raises(TypeError, match=r"1099511627776.*'labels:0' of type int32"):
            sess.run(labels, {labels: 2**40})
        with pytest.raises(TypeError, match="cannot be a sl.Tensor"):
            sess.run(x, {x: sl.constant([1.0])})


def test_a_tensor_fed_twice_takes_the_last_value():
    x = sl.placeholder(sl.float32, [], name="x")
    with sl.Session() as sess:
        assert sess.run(x * 2.0, {x: 1.0, "x:0": 3.0}) == 6.0


# -- 2. nested feed_dict keys ------------------------------------------------------------------
def state_placeholders(name):
    return LSTMStateTuple(
        sl.placeholder(sl.float32, [None, 2], name=f"{name}_c"),
        sl.placeholder(sl.float32, [None, 2], name=f"{name}_h"),
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_a_nested_key_is_fed_element_wise(engine):
    Pair = collections.namedtuple("Pair", "first second")
    s0, s1 = state_placeholders("s0"), state_placeholders("s1")
    scale = sl.placeholder(sl.float32, [], name="scale")
    total = (s0.c + 2.0 * s0.h + 10.0 * s1.c + 100.0 * s1.h) * scale
    one, two = np.ones([1, 2], np.float32), np.full([1, 2], 2.0)
    with session(engine) as sess:
        assert sess.run(
            total, {s0: LSTMStateTuple(one, two), s1: (one, [[0, 0]]), scale: 1.0}
        ).tolist() == [[15.0, 15.0]]
        # a tuple of state tuples (a MultiRNNCell's state) and a namedtuple with a scalar
        nested = {(s0, s1): ((one, one), LSTMStateTuple(two, one)), Pair(scale, ()): (2, ())}
        assert sess.run(total, nested).tolist() == [[2 * 123.0, 2 * 123.0]]
        # the value a run returned for a nested fetch feeds the same key back
        state = sess.run((s0, s1), nested)
        assert isinstance(state[1], LSTMStateTuple)
        assert sess.run(total, {(s0, s1): state, scale: 1.0}).tolist() == [[123.0, 123.0]]
        # as TF1: a value of another nesting with as many leaves is paired in order
        flat = {(s0, s1): [one, one, two, one], scale: 1.0}
        assert sess.run(total, flat).tolist() == [[123.0, 123.0]]


def test_a_nested_key_with_a_value_of_another_structure_is_an_error():
    s0, s1 = state_placeholders("s0"), state_placeholders("s1")
    total = s0.c + s0.h + s1.c + s1.h
    one = np.ones([1, 2], np.float32)
    with sl.Session() as sess:
        with pytest.raises(
            ValueError,
            match=r"LSTMStateTuple\(s0_c:0, s0_h:0\) holds 2 "
            r"tensors, but its value array\(2, 1, 2\) has 1",
        ):
            sess.run(total, {s0: np.ones([2, 1, 2]), s1: (one, one)})
        with pytest.raises(ValueError, match="holds 4 tensors, but its value.* has 3"):
            sess.run(total, {(s0, s1): ((one, one), (one,))})
        with pytest.raises(ValueError, match="s0_c:0.* is not unique"):
            sess.run(total, {s0: (one, one), (s0.c, s1): (one, (one, one))})


# -- 3. run returns when the step has run -----------------------------------------------------
@pytest.mark.parametrize("engine", [*ENGINES, "partitioned"])
def test_running_a_train_op_returns_when_its_updates_are_done(engine):
    # JAX dispatches asynchronously: before, sess.run(train_op) returned while the step still ran
    # (a multi-tower script "trained" 500,000 examples a second on two cores)
    rng = np.random.default_rng(0)
    with sl.device("/cpu:0"):
        w = sl.Variable(rng.normal(size=[700, 700]).astype(np.float32) / 30, name="w")
    with sl.device("/cpu:1" if engine == "partitioned" else "/cpu:0"):
        heavy = w
        for _ in range(6):
            heavy = sl.tanh(sl.matmul(heavy, heavy))
    train_op = w.assign(heavy).op
    config = sl.SessionConfig(engine="auto" if engine == "partitioned" else engine)
    with sl.Session(config=config) as sess:
        sess.run(w.initializer)
        metadata = sl.RunMetadata()
        assert sess.run(train_op, run_metadata=metadata) is None
        if engine == "partitioned":
            assert len(metadata.partitions) == 2
        (value,) = sess._state.variables.values()  # w's array in the session
        assert value.is_ready()


# -- 4. config_protos and session do not import each other -----------------------------------
def test_config_protos_and_session_import_their_config_from_a_module_of_its_own():
    framework = pathlib.Path(sl.__file__).parent / "framework"

    def imported(name):
        tree = ast.parse((framework / f"{name}.py").read_text())
        return {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}

    assert "sluice.framework.session" not in imported("config_protos")
    assert "sluice.framework.session_config" in imported("config_protos")
    assert sl.SessionConfig is sl.Session(config=sl.ConfigProto()).config.__class__
