"""State cells: one value used by several graphs through mirrors, moved (never copied) into the
table of the bound session that runs next; unbound (TF1) sessions keep their own values."""

import threading

import numpy as np
import pytest

import sluice as sl
from sluice.framework import state_cells
from sluice.testing import differential_sessions

BOUND = {"keras_state": True}


def shared_variable(value=1.0, name="w"):
    """A variable of a new graph with a cell, as Keras's add_weight makes them."""
    home = sl.Graph()
    with home.as_default():
        v = sl.Variable(np.float32(value), name=name)
    state_cells.attach(v, state_cells.StateCell(name, v.dtype, v.shape, lambda: value))
    return home, v


def session(g, engine="auto", **config):
    return sl.Session(graph=g, config=sl.SessionConfig(engine=engine, **config))


@pytest.mark.parametrize("engine", ["compiled", "interpreted"])
def test_two_graphs_see_each_others_writes(engine):
    home, v = shared_variable()
    other = sl.Graph()
    with home.as_default():
        add_one = v.assign_add(1.0)
    with other.as_default():
        times_ten = v.assign(v * 10.0)  # the mirror of v in `other`
    s1, s2 = session(home, engine, **BOUND), session(other, engine, **BOUND)
    s1.run(v.initializer)
    assert s1.run(add_one) == 2.0
    assert s2.run(times_ten) == 20.0
    assert s1.run(add_one) == 21.0  # moved back
    assert s2.run(v.graph_variable(other)) == 21.0


def test_a_mirror_is_made_once_per_graph_at_its_root():
    home, v = shared_variable(name="dense/kernel")
    other = sl.Graph()
    with other.as_default():
        with sl.variable_scope("inside"), sl.control_dependencies([sl.no_op()]):
            first = v.graph_variable()
        assert v.graph_variable() is first
    assert first.op.name == "dense/kernel" and first.op.control_inputs == []
    assert v.graph_variable(home) is v
    assert state_cells.cell_of(first) is state_cells.cell_of(v)


def test_a_move_does_not_copy_the_buffer():
    home, v = shared_variable()
    other = sl.Graph()
    s1, s2 = session(home, **BOUND), session(other, **BOUND)
    s1.run(v.initializer)
    mirror = v.graph_variable(other)
    table1 = s1._state.variables  # noqa: SLF001 (the session's table, to see the move)
    buffer = table1["w"]
    s2.run(mirror)
    assert "w" not in table1 and s2._state.variables["w"] is buffer  # noqa: SLF001


def test_a_compiled_step_that_donates_a_shared_value_then_a_read_from_the_other_graph():
    home, v = shared_variable(3.0)
    other = sl.Graph()
    with home.as_default():
        step = v.assign(v * 2.0)
    with other.as_default():
        read = v + 0.0
    s1, s2 = session(home, "compiled", **BOUND), session(other, "compiled", **BOUND)
    s1.run(v.initializer)
    for _ in range(3):
        s1.run(step)
    assert s2.run(read) == 24.0
    assert s1.run(step) == 48.0


def test_a_first_value_comes_from_the_graph_that_needs_it_first():
    home, v = shared_variable(7.0)
    other = sl.Graph()
    mirror = v.graph_variable(other)
    s2 = session(other, **BOUND)
    s2.run(mirror.initializer)
    assert state_cells.cell_of(v).has_value
    assert session(home, **BOUND).run(v) == 7.0


def test_unbound_sessions_keep_tf1_per_session_values():
    home, v = shared_variable(1.0)
    with home.as_default():
        bump = v.assign_add(1.0)
    a, b = session(home), session(home)
    a.run(v.initializer)
    b.run(v.initializer)
    a.run(bump)
    assert a.run(v) == 2.0 and b.run(v) == 1.0
    assert not state_cells.cell_of(v).has_value  # a TF1 session's values are its own


def test_load_into_a_bound_session_makes_it_the_home():
    home, v = shared_variable(1.0)
    other = sl.Graph()
    s1, s2 = session(home, **BOUND), session(other, **BOUND)
    s1.run(v.initializer)
    v.load(5.0, s2)  # loads the mirror in s2's graph
    assert s2.run(v.graph_variable(other)) == 5.0
    assert s1.run(v) == 5.0


def test_compared_engines_see_moved_values():
    home, v = shared_variable(2.0)
    other = sl.Graph()
    with other.as_default():
        cube = v * v * v
    s1 = session(home, **BOUND)
    s1.run(v.initializer)
    with differential_sessions():
        assert session(other, **BOUND).run(cube) == 8.0


def test_two_threads_alternating_steps_of_two_graphs():
    home, v = shared_variable(0.0)
    other = sl.Graph()
    with home.as_default():
        inc_home = v.assign_add(1.0)
    with other.as_default():
        inc_other = v.assign_add(1.0)
    s1, s2 = session(home, **BOUND), session(other, **BOUND)
    s1.run(v.initializer)

    def work(sess, op):
        for _ in range(50):
            sess.run(op)

    threads = [threading.Thread(target=work, args=a) for a in ((s1, inc_home), (s2, inc_other))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert s1.run(v) == 100.0


def test_a_plain_variable_from_another_graph_is_refused():
    with sl.Graph().as_default():
        v = sl.Variable(1.0)
    with sl.Graph().as_default(), pytest.raises(ValueError, match="another graph"):
        v.graph_variable()
