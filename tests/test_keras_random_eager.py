"""keras.random outside graph code, as a Keras script draws: values at once (`sl.Array`s), from
the one state a SeedGenerator has in graph code too."""

import numpy as np
import pytest

import sluice as sl
from sluice.framework.ir import tracing
from sluice.framework.session_config import SessionConfig


@pytest.fixture(autouse=True)
def fresh_graph():
    """Overrides the suite's fixture: no `with graph.as_default()` is open, as in a script (in
    one, draws are graph code)."""
    sl.reset_default_graph()
    yield


def run(*tensors):
    return sl.Session(graph=tensors[0].graph).run(list(tensors))


def test_outside_graph_code_a_draw_is_an_array_and_continues_the_state():
    gen = sl.random.SeedGenerator(5)
    a = sl.random.normal((2, 3), seed=gen)
    b = sl.random.uniform((4,), seed=gen)
    assert type(a) is sl.Array and a.shape == (2, 3) and a.dtype == np.float32
    assert isinstance(b, sl.Array) and 0 <= b.min() and b.max() < 1
    assert gen.state.numpy().tolist() == [5, 2]
    assert isinstance(sl.random.dropout(np.ones(4), 0.5, seed=1), sl.Array)  # Keras's only
    # the same sequence in graph code, and the state is one: a trace continues it
    again = sl.random.SeedGenerator(5)
    with sl.Graph().as_default():
        x, y = sl.random.normal((2, 3), seed=again), sl.random.uniform((4,), seed=again)
        np.testing.assert_array_equal(run(x, y)[0], a)
        p = sl.placeholder(sl.float32, [2])
        with tracing.tracing():
            traced = sl.random.normal(sl.shape(p), seed=gen)
        # a bound session (as Keras's runtime makes), into which the state's value moves
        with sl.Session(graph=p.graph, config=SessionConfig(keras_state=True)) as sess:
            first = sess.run(traced, {p: np.zeros(2)})
    assert gen.state.numpy().tolist() == [5, 3]  # the trace's draw advanced the one state
    gen.state.assign([5, 2])
    np.testing.assert_array_equal(sl.random.normal((2,), seed=gen), first)
