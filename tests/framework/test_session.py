"""Session.run: fetch structures, pruning, feeds, errors."""

import collections

import numpy as np
import pytest

import sluice as sl


def test_nested_fetch_structures():
    Point = collections.namedtuple("Point", "x y")
    a, b = sl.constant(1.0), sl.constant([2, 3])
    with sl.Session() as s:
        r = s.run({"p": Point(a, b), "l": [a, (b,)], "op": sl.no_op()})
    assert isinstance(r["p"], Point)
    assert r["p"].x == 1.0
    np.testing.assert_array_equal(r["l"][1][0], [2, 3])
    assert r["op"] is None


def test_fetch_by_name():
    sl.constant(4.0, name="four")
    with sl.Session() as s:
        assert s.run("four:0") == 4.0


def test_only_what_the_fetches_need_runs():
    x = sl.placeholder(sl.float32, [])
    needed = sl.constant(1.0) + 1.0
    sl.identity(x)  # would need a feed, but is not fetched
    meta = sl.RunMetadata()
    with sl.Session() as s:
        assert s.run(needed, run_metadata=meta) == 2.0
    assert meta.nodes_in_plan == 3


def test_feed_checks_dtype_and_shape():
    x = sl.placeholder(sl.int32, [None, 2], name="x")
    y = x * 2
    with sl.Session() as s:
        np.testing.assert_array_equal(s.run(y, {x: [[1, 2]]}), [[2, 4]])
        with pytest.raises(ValueError, match=r"Cannot feed value of shape \(3,\)"):
            s.run(y, {x: [1, 2, 3]})
        # converted to the placeholder's dtype, as TF1 converts it (np.asarray(v, dtype))
        np.testing.assert_array_equal(s.run(y, {x: np.full([1, 2], 1.5, np.float32)}), [[2, 2]])


def test_feed_by_name_and_feeding_a_non_placeholder():
    x = sl.placeholder(sl.float32, [], name="x")
    y = x + 1.0
    z = y * 2.0
    with sl.Session() as s:
        assert s.run(z, {"x:0": 1.0}) == 4.0
        assert s.run(z, {y: 10.0}) == 20.0


def test_missing_feed_names_the_placeholder():
    x = sl.placeholder(sl.float32, [None, 2], name="inputs")
    with sl.Session() as s, pytest.raises(sl.errors.InvalidArgumentError, match="inputs"):
        s.run(x * 2.0)


def test_uninitialized_variable_is_a_clear_error():
    v = sl.Variable(1.0, name="weights")
    with sl.Session() as s, pytest.raises(sl.errors.FailedPreconditionError, match="weights"):
        s.run(v * 2.0)


def test_session_is_a_context_manager_and_closes():
    s = sl.Session()
    with s:
        assert sl.get_default_session() is s
        assert sl.constant(2).eval() == 2
    with pytest.raises(RuntimeError, match="closed"):
        s.run(sl.constant(1))


def test_variables_persist_across_runs_and_sessions_are_independent():
    v = sl.Variable(0, name="count")
    inc = v.assign_add(1)
    init = sl.global_variables_initializer()
    with sl.Session() as s1:
        s1.run(init)
        s1.run(inc)
        s1.run(inc)
        assert s1.run(v) == 2
        with sl.Session() as s2:
            s2.run(init)
            assert s2.run(v) == 0


def test_variable_load_and_eval():
    v = sl.Variable(np.zeros([2], np.float32), name="v")
    with sl.Session() as s:
        v.load([1.0, 2.0], s)
        np.testing.assert_array_equal(v.eval(s), [1.0, 2.0])


def test_variable_shape_check_on_assign():
    v = sl.Variable(np.zeros([2], np.float32), name="v")
    with pytest.raises(ValueError, match="shape"):
        v.assign(np.zeros([3], np.float32))


@pytest.mark.parametrize("engine", ["compiled", "interpreted"])
def test_a_step_that_runs_out_of_memory_is_tf1s_resource_exhausted_and_changes_nothing(engine):
    v = sl.Variable(np.ones(3, np.float32))
    huge = sl.reduce_sum(sl.fill([2**20, 2**20, 64], 1.0))  # 256 TiB
    update = v.assign_add(sl.ones([3]) * huge)
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        sess.run(sl.global_variables_initializer())
        with pytest.raises(sl.errors.ResourceExhaustedError, match="OOM when running"):
            sess.run(update)
        np.testing.assert_array_equal(sess.run(v), [1, 1, 1])
