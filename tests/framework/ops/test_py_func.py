"""`sl.py_func` and `sl.numpy_function`, checked as TF1's py_func_test checks them: results and
their structure (one dtype gives a Tensor, a list gives a list), the dtype and count checks and
the errors TF1 maps exceptions to, stateful calls once per run and per loop iteration, no
gradient; in both engines (the compiled one through a JAX host callback when the results'
shapes are set, else interpreted with one log line)."""

import logging

import numpy as np
import pytest

import sluice as sl

ENGINES = ["compiled", "interpreted"]


def session(engine):
    return sl.Session(config=sl.SessionConfig(engine=engine))


def _shaped(t, shape):
    t.set_shape(shape)
    return t


@pytest.mark.parametrize("engine", ENGINES)
def test_results_and_their_structure(engine):
    x = sl.constant([1.0, 2.0], sl.float32)
    n = sl.constant(3, sl.int64)

    def both(a, k):
        return a * k.astype(np.float32), np.int64(k + 1)

    single = _shaped(sl.py_func(lambda a: a + 1.0, [x], sl.float32), [2])
    pair = sl.py_func(both, [x, n], [sl.float32, sl.int64])
    one_in_list = sl.py_func(lambda a: a, [x], [sl.float32])
    assert isinstance(single, sl.Tensor) and single.op.type == "PyFunc"
    assert isinstance(pair, list) and [t.dtype for t in pair] == [sl.float32, sl.int64]
    assert isinstance(one_in_list, list) and len(one_in_list) == 1
    assert pair[0].shape.rank is None  # unknown, as TF1, until set
    _shaped(pair[0], [2]), _shaped(pair[1], []), _shaped(one_in_list[0], [2])
    with session(engine) as s:
        got = s.run([single, pair, one_in_list])
    np.testing.assert_allclose(got[0], [2.0, 3.0], rtol=1e-6)
    np.testing.assert_allclose(got[1][0], [3.0, 6.0], rtol=1e-6)
    assert got[1][1] == 4 and got[1][1].dtype == np.int64
    np.testing.assert_allclose(got[2][0], [1.0, 2.0], rtol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_arguments_are_numpy_arrays_and_scalars(engine):
    seen = []

    def record(a, b):
        seen.append((type(a), type(b), b.flags.writeable))
        b[0] = 0  # a writable copy: the graph's value is untouched
        return b

    y = _shaped(sl.py_func(record, [sl.constant(2.5), sl.constant([1, 2])], sl.int32), [2])
    with session(engine) as s:
        np.testing.assert_array_equal(s.run(y), [0, 2])
    assert seen == [(np.float32, np.ndarray, True)]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_stateful_call_runs_once_per_run_and_is_not_merged(engine):
    calls = []

    def count():
        calls.append(1)
        return np.float32(len(calls))

    a = _shaped(sl.py_func(count, [], sl.float32), [])
    b = _shaped(sl.py_func(count, [], sl.float32), [])  # an equal op: never merged with a
    twice = a + a
    with session(engine) as s:
        assert s.run(twice) == 2.0  # a ran once in this run
        assert s.run(twice) == 4.0
        assert sorted(s.run([a, b])) == [3.0, 4.0]
    assert len(calls) == 4


@pytest.mark.parametrize("engine", ENGINES)
def test_stateless_and_numpy_function(engine):
    x = sl.constant([3, 1, 2])
    stateless = _shaped(sl.py_func(np.sort, [x], sl.int32, stateful=False), [3])
    numpy_fn = _shaped(sl.numpy_function(lambda a: a * 2, [x], sl.int32), [3])
    assert stateless.op.type == "PyFuncStateless" and numpy_fn.op.type == "PyFunc"
    with session(engine) as s:
        np.testing.assert_array_equal(s.run(stateless), [1, 2, 3])
        np.testing.assert_array_equal(s.run(numpy_fn), [6, 2, 4])


@pytest.mark.parametrize("engine", ENGINES)
def test_each_loop_iteration_calls_with_its_values(engine):
    calls = []

    def double(i, v):
        calls.append(int(i))
        return v * 2

    x = sl.placeholder(sl.float32, [2])

    def body(i, v):
        return i + 1, _shaped(sl.py_func(double, [i, v], sl.float32), [2])

    _, y = sl.while_loop(lambda i, v: i < 3, body, [0, x])
    with session(engine) as s:
        np.testing.assert_allclose(s.run(y, {x: [1.0, 2.0]}), [8.0, 16.0], rtol=1e-6)
    assert calls == [0, 1, 2]


@pytest.mark.parametrize("engine", ENGINES)
def test_an_untaken_branch_does_not_call(engine):
    calls = []

    def note(a):
        calls.append(float(a))
        return a

    x = sl.placeholder(sl.float32, [])
    pred = sl.placeholder(sl.bool, [])
    y = sl.cond(pred, lambda: _shaped(sl.py_func(note, [x], sl.float32), []), lambda: -x)
    with session(engine) as s:
        assert s.run(y, {x: 1.0, pred: False}) == -1.0
        assert s.run(y, {x: 2.0, pred: True}) == 2.0
    assert calls == [2.0]


@pytest.mark.parametrize("engine", ENGINES)
def test_wrong_results_are_invalid_argument_errors(engine):
    x = sl.constant([1.0, 2.0])
    wrong_dtype = _shaped(sl.py_func(lambda a: 1.5, [x], sl.float32), [])  # a Python float
    wrong_count = _shaped(sl.py_func(lambda a: (a, a), [x], [sl.float32])[0], [2])
    wrong_shape = _shaped(sl.py_func(lambda a: a, [x], sl.float32), [3])
    with session(engine) as s:
        with pytest.raises(
            sl.errors.InvalidArgumentError,
            match=r"0-th value returned by pyfunc_\d+ is double, but expects float",
        ):
            s.run(wrong_dtype)
        with pytest.raises(
            sl.errors.InvalidArgumentError,
            match=r"pyfunc_\d+ returns 2 values, but expects to see 1 values",
        ):
            s.run(wrong_count)
        with pytest.raises(sl.errors.InvalidArgumentError, match="static shape"):
            s.run(wrong_shape)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "exception, error",
    [
        (ValueError, sl.errors.InvalidArgumentError),
        (StopIteration, sl.errors.OutOfRangeError),
        (NotImplementedError, sl.errors.UnimplementedError),
        (RuntimeError, sl.errors.UnknownError),
    ],
)
def test_exceptions_map_to_tf1_errors_and_keep_variables(engine, exception, error):
    v = sl.Variable(1.0)
    x = sl.placeholder(sl.float32, [])

    def maybe_raise(a):
        if a > 5:
            raise exception("no more data")
        return a

    step = v.assign_add(_shaped(sl.py_func(maybe_raise, [x], sl.float32), []))
    with session(engine) as s:
        s.run(v.initializer)
        s.run(step, {x: 2.0})
        with pytest.raises(error, match=f"{exception.__name__}: no more data") as info:
            s.run(step, {x: 7.0})
        assert info.value.op.type == "PyFunc"
        assert s.run(v) == 3.0  # the failed step changed nothing


def test_no_gradient_through_py_func():
    x = sl.constant(2.0)
    y = sl.py_func(lambda a: a * a, [x], sl.float32)
    assert sl.gradients(y, x) == [None]
    (dx,) = sl.gradients(y + 3.0 * x, x)  # only the direct path
    assert sl.Session().run(dx) == 3.0


def test_unknown_shapes_run_interpreted_under_auto_and_refuse_compiled(caplog):
    x = sl.constant([3.0, 1.0])
    y = sl.py_func(np.sort, [x], sl.float32)
    with caplog.at_level(logging.WARNING, logger="sluice"):
        with sl.Session() as s:  # engine "auto"
            np.testing.assert_allclose(s.run(y), [1.0, 3.0])
            np.testing.assert_allclose(s.run(y), [1.0, 3.0])
    said = [r.getMessage() for r in caplog.records if "PyFunc" in r.getMessage()]
    assert len(said) == 1 and "set_shape" in said[0]
    with pytest.raises(sl.errors.UnimplementedError, match="set_shape"):
        session("compiled").run(y)


def test_construction_errors():
    with pytest.raises(ValueError, match="callable"):
        sl.py_func(3, [sl.constant(1.0)], sl.float32)
    with pytest.raises(TypeError, match="list"):
        sl.py_func(abs, sl.constant(1.0), sl.float32)
    op = sl.py_func(lambda: None, [], [])
    assert isinstance(op, sl.Operation)
    sl.Session(config=sl.SessionConfig(engine="interpreted")).run(op)


def test_tout_none_is_a_construction_error():
    with pytest.raises(TypeError, match="Tout"):
        sl.py_func(abs, [sl.constant(1.0)], None)
    with pytest.raises(TypeError, match="Tout"):
        sl.py_func(abs, [sl.constant(1.0)], [sl.float32, None])
