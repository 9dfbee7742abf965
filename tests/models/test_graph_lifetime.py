"""A model's graph, its session and its values are freed once nothing of the user's refers to
them (a hyperparameter search that builds models in a loop keeps only the live ones): per-graph
state lives in the graph's `attachments`, not in weak maps whose values would refer back to it;
`sl.backend.clear_session()` drops the default graph that functional models are built in."""

import gc
import threading
import weakref

import numpy as np

import sluice as sl
from sluice import layers as L

X = np.ones((4, 3), np.float32)
Y = np.ones((4, 1), np.float32)


class Small(sl.Model):
    def __init__(self, units, base=None):
        super().__init__()
        self.base = base
        self.hidden = L.Dense(units, activation="relu")
        self.out = L.Dense(1)

    def call(self, x):
        if self.base is not None:
            x = self.base(x)
        return self.out(self.hidden(x))


def _trained(model):
    model.compile("adam", "mse")
    model.fit(X, Y, epochs=1, batch_size=2, verbose=0)
    model.evaluate(X, Y, verbose=0)
    model.predict(X, verbose=0)
    return weakref.ref(model.graph), weakref.ref(model)


def test_subclassed_models_built_in_a_loop_are_freed():
    refs = [_trained(Small(units)) for units in (2, 3)]
    gc.collect()
    assert all(graph() is None and model() is None for graph, model in refs)


def test_functional_models_are_freed_by_clear_session():
    """Built in the default graph, as a script builds them (in a thread of its own here: the
    tests run inside `with graph.as_default()`, where clear_session refuses to reset it)."""
    refs = []

    def search():
        for units in (2, 3):
            inputs = sl.Input((3,))
            refs.append(_trained(sl.Model(inputs, L.Dense(1)(L.Dense(units)(inputs)))))
        assert all(graph() is not None for graph, _ in refs)  # the default graph holds them
        sl.backend.clear_session()

    thread = threading.Thread(target=search)
    thread.start()
    thread.join()
    gc.collect()
    assert len(refs) == 2 and all(graph() is None and model() is None for graph, model in refs)


def test_a_long_lived_layer_keeps_no_graph_of_the_models_that_called_it():
    base = L.Dense(3, name="shared_base")
    base(X)  # built, and called on values
    refs = [_trained(Small(units, base)) for units in (2, 3)]
    gc.collect()
    assert all(graph() is None and model() is None for graph, model in refs)
    kernel = base.get_weights()[0]
    np.testing.assert_allclose(np.asarray(base(X)), X @ kernel + base.get_weights()[1], rtol=1e-6)
    value_graph = weakref.ref(base.call_nodes[-1].outputs.graph)
    del base
    gc.collect()
    assert value_graph() is None  # a layer's private graph of calls on values goes with it
