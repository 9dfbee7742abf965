"""TF1's module-level variable functions (`sl.assign`, `sl.scatter_*`,
`sl.report_uninitialized_variables`) and `sl.compat.v1`, in both engines, at TF's tolerances."""

import numpy as np
import pytest

import sluice as sl

ENGINES = ["interpreted", "compiled"]
INIT = np.arange(8, dtype=np.float32).reshape(4, 2)


def session(graph, engine):
    return sl.Session(graph=graph, config=sl.SessionConfig(engine=engine))


@pytest.mark.parametrize("engine", ENGINES)
def test_assign_functions_return_the_new_value(engine):
    g = sl.Graph()
    with g.as_default():
        v = sl.Variable([1.0, 2.0], name="v")
        set_ = sl.assign(v, [5.0, 6.0])
        add = sl.assign_add(v, [1.0, 1.0], use_locking=True)
        sub = sl.assign_sub(v, [0.5, 2.0])
    with session(g, engine) as sess:
        sess.run(v.initializer)
        np.testing.assert_allclose(sess.run(set_), [5.0, 6.0], atol=1e-6)
        np.testing.assert_allclose(sess.run(add), [6.0, 7.0], atol=1e-6)
        np.testing.assert_allclose(sess.run(sub), [5.5, 5.0], atol=1e-6)
        np.testing.assert_allclose(sess.run(v.read_value()), [5.5, 5.0], atol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_scatter_functions_match_numpy(engine):
    g = sl.Graph()
    with g.as_default():
        v = sl.Variable(INIT, name="v")
        update = sl.scatter_update(v, [3, 0], [[10.0, 11.0], [12.0, 13.0]])
        add = sl.scatter_add(v, np.array([1, 1], np.int64), [[1.0, 2.0], [3.0, 4.0]])
        sub = sl.scatter_sub(v, [2], 1.5)  # a scalar update applies at every index
        row = sl.scatter_update(v, 0, [7.0, 7.0])  # a scalar index: updates of shape [2]
    expected = INIT.copy()
    with session(g, engine) as sess:
        sess.run(v.initializer)
        expected[[3, 0]] = [[10.0, 11.0], [12.0, 13.0]]
        np.testing.assert_allclose(sess.run(update), expected, atol=1e-6)
        expected[1] += [4.0, 6.0]  # repeated indices add up
        np.testing.assert_allclose(sess.run(add), expected, atol=1e-6)
        expected[2] -= 1.5
        np.testing.assert_allclose(sess.run(sub), expected, atol=1e-6)
        expected[0] = 7.0
        np.testing.assert_allclose(sess.run(row), expected, atol=1e-6)
        np.testing.assert_allclose(sess.run(v), expected, atol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_scatter_add_inside_a_while_loop(engine):
    g = sl.Graph()
    with g.as_default():
        v = sl.Variable(np.zeros(3, np.float32), name="counts")

        def body(i):
            with sl.control_dependencies([sl.scatter_add(v, i % 3, 1.0)]):
                return i + 1

        loop = sl.while_loop(lambda i: i < 7, body, [sl.constant(0)])
    with session(g, engine) as sess:
        sess.run(v.initializer)
        assert sess.run(loop) == 7
        np.testing.assert_allclose(sess.run(v), [3.0, 2.0, 2.0], atol=1e-6)


def test_a_fed_index_out_of_range_raises_when_interpreted():
    g = sl.Graph()
    with g.as_default():
        v = sl.Variable(INIT, name="v")
        i = sl.placeholder(sl.int32, [None])
        add = sl.scatter_add(v, i, 1.0)
    with session(g, "interpreted") as sess:
        sess.run(v.initializer)
        with pytest.raises(sl.errors.InvalidArgumentError, match=r"4, which is not in \[0, 4\)"):
            sess.run(add, {i: [4]})
        with pytest.raises(sl.errors.InvalidArgumentError, match="-1"):
            sess.run(add, {i: [-1]})
        np.testing.assert_allclose(sess.run(v), INIT)


def test_a_fed_index_out_of_range_changes_nothing_when_compiled():
    # as on TF's GPUs: the compiled step cannot raise on a value it only sees while running
    g = sl.Graph()
    with g.as_default():
        v = sl.Variable(INIT, name="v")
        i = sl.placeholder(sl.int32, [None])
        add = sl.scatter_add(v, i, 1.0)
    with session(g, "compiled") as sess:
        sess.run(v.initializer)
        expected = INIT.copy()
        expected[1] += 1.0
        np.testing.assert_allclose(sess.run(add, {i: [4, 1, -1]}), expected)


def test_bad_scatters_fail_while_building():
    with sl.Graph().as_default():
        v = sl.Variable(INIT, name="v")
        with pytest.raises(ValueError, match=r"ResourceScatterUpdate.*indices.shape \+ variable"):
            sl.scatter_update(v, [0, 1], [[1.0, 2.0, 3.0]] * 2)
        with pytest.raises(TypeError, match="scatter_add's indices must hold integers"):
            sl.scatter_add(v, [0.5], [[1.0, 2.0]])
        with pytest.raises(TypeError, match="scatter_add's indices.*int32 or int64"):
            sl.scatter_add(v, sl.constant([0.5]), [[1.0, 2.0]])
        with pytest.raises(ValueError, match=r"ResourceScatterSub.*7, which is not in \[0, 4\)"):
            sl.scatter_sub(v, [7], [[1.0, 2.0]])
        with pytest.raises(TypeError, match="ResourceScatterAdd.*cannot scatter int32 updates"):
            sl.scatter_add(v, [0], sl.constant([[1, 2]]))
        with pytest.raises(ValueError, match="scalar variable"):
            sl.scatter_add(sl.Variable(1.0, name="s"), [0], 1.0)
        with pytest.raises(TypeError, match="scatter_update: ref must be a sl.Variable"):
            sl.scatter_update(sl.constant(INIT), [0], [[1.0, 2.0]])
        with pytest.raises(TypeError, match="assign_add: ref must be a sl.Variable"):
            sl.assign_add(sl.constant(1.0), 1.0)
        with pytest.raises(ValueError, match=r"shape \(3,\).*shape \(4, 2\)"):
            sl.assign(v, [1.0, 2.0, 3.0])


@pytest.mark.parametrize("engine", ENGINES)
def test_report_uninitialized_variables(engine):
    g = sl.Graph()
    with g.as_default():
        a = sl.Variable(1.0, name="a")
        with sl.variable_scope("scope"):
            b = sl.Variable(2.0, name="b")
        local = sl.Variable(3.0, name="local", collections=[sl.GraphKeys.LOCAL_VARIABLES])
        report = sl.report_uninitialized_variables()
        only_a = sl.report_uninitialized_variables([a])
        none = sl.report_uninitialized_variables([])
    with session(g, engine) as sess:
        assert sess.run(report).tolist() == [b"a", b"scope/b", b"local"]
        sess.run([a.initializer, local.initializer])
        assert sess.run(report).tolist() == [b"scope/b"]
        assert sess.run(only_a).shape == (0,)
        assert sess.run(none).shape == (0,)
        sess.run(b.initializer)
        assert sess.run(report).shape == (0,)


def test_initialized_value_runs_the_initializer_first():
    g = sl.Graph()
    with g.as_default():
        v = sl.Variable([1.0, 2.0], name="v")
        w = sl.Variable(v.initialized_value() * 2.0, name="w")
    with session(g, "interpreted") as sess:
        sess.run(w.initializer)  # v's initializer runs too, as in TF1
        np.testing.assert_allclose(sess.run(w.read_value()), [2.0, 4.0], atol=1e-6)


def test_compat_v1_is_the_tf1_surface():
    v1 = sl.compat.v1
    assert v1 is sl
    assert v1.placeholder is sl.placeholder and v1.Session is sl.Session
    g = v1.Graph()
    with g.as_default():
        x = v1.placeholder(v1.float32, [None], name="x")
        w = v1.Variable(3.0, name="w")
        loss = v1.reduce_sum(v1.square(w * x))
        step = v1.train.AdamOptimizer(0.1).minimize(loss)
        init = v1.global_variables_initializer()
    with v1.Session(graph=g) as sess:
        sess.run(init)
        sess.run(step, {x: np.array([1.0, 2.0], np.float32)})
        # Adam's first step moves each weight by the learning rate against the gradient's sign
        np.testing.assert_allclose(sess.run(w), 2.9, atol=1e-6)


@pytest.mark.parametrize("engine", ["interpreted", "compiled"])
def test_a_value_fed_through_an_unknown_shape_cannot_reshape_a_variable(engine):
    v = sl.Variable(np.zeros(3, np.float32))
    fed = sl.placeholder(sl.float32, [None])
    assign, add = sl.assign(v, fed), sl.assign_add(v, fed)
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(assign, {fed: np.ones(3, np.float32)}), [1, 1, 1])
        for op, n in ((assign, 5), (add, 5), (add, 1)):  # a longer value; one that broadcasts
            with pytest.raises(sl.errors.InvalidArgumentError, match="variable of shape"):
                sess.run(op, {fed: np.ones(n, np.float32)})
        np.testing.assert_array_equal(sess.run(v), [1, 1, 1])
