"""A metric's state belongs to the metric (Keras 3): one metric updated by two models' steps, in
two graphs, and on arrays keeps one state that `result()`, `variables` and `reset_state()` see;
a Keras 3-style metric making its variables in `__init__`; `metric(...)` = update then result."""

import numpy as np

import sluice as sl
from sluice import layers as L

keras = sl


class SharedTracker(keras.Model):
    """A custom step that adds the batch's targets to a tracker shared with another model.
    The tracker is a private attribute, so this model's fit does not reset it."""

    def __init__(self, tracker, **kwargs):
        super().__init__(**kwargs)
        self.dense = L.Dense(1)
        self._tracker = tracker

    def call(self, x):
        return self.dense(x)

    def train_step(self, data):
        x, y = data
        with sl.GradientTape() as tape:
            loss = sl.ops.mean(sl.ops.square(self(x, training=True) - y))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(grads, self.trainable_variables)
        self._tracker.update_state(y)
        return {"shared": self._tracker.result()}


def _fit(model, value, n=4):
    x = np.ones((n, 2), np.float32)
    y = np.full((n, 1), value, np.float32)
    return model.fit(x, y, batch_size=2, epochs=1, shuffle=False, verbose=0).history["shared"]


def test_two_models_steps_and_values_update_one_mean():
    tracker = keras.metrics.Mean(name="shared")
    tracker.update_state([10.0, 10.0])  # on arrays first: the state goes on from here
    first, second = SharedTracker(tracker), SharedTracker(tracker)
    first.compile("sgd")
    second.compile("sgd")
    assert _fit(first, 1.0) == [(20 + 4 * 1) / 6]
    assert _fit(second, 4.0) == [(24 + 4 * 4) / 10]  # a second graph, the same state
    assert first.graph is not second.graph
    np.testing.assert_allclose(tracker.result(), 4.0)
    total, count = (v.numpy() for v in tracker.variables)
    assert (total, count) == (40.0, 10.0)
    tracker.update_state([-40.0, 0.0])
    np.testing.assert_allclose(tracker.result(), 0.0)
    tracker.reset_state()
    assert tracker.result() == 0.0
    assert _fit(first, 3.0) == [3.0]  # the first model's step starts from the reset state
    assert _fit(second, 5.0) == [4.0]


def test_a_metric_used_on_arrays_goes_on_in_a_models_step():
    """Keras 3: the variables belong to the metric, so compiling it keeps what it has seen
    (evaluate resets it at its start, as Keras's does)."""
    auc = keras.metrics.AUC(name="auc")
    auc.update_state([0, 1, 1], [0.2, 0.6, 0.4])
    assert auc.result() == 1.0
    model = SharedTracker(keras.metrics.Sum(name="unused"))
    model.compile("sgd", "mse", metrics=[auc])
    x, y = np.array([[0.0, 1.0], [1.0, 0.0]], np.float32), np.array([[0.0], [1.0]], np.float32)
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    want = keras.metrics.AUC()
    want.update_state(y, model.predict(x, verbose=0))
    np.testing.assert_allclose(logs["auc"], want.result(), rtol=1e-6)
    auc.update_state([0, 1, 1], [0.2, 0.6, 0.4])  # continues from evaluate's state
    both = keras.metrics.AUC()
    both.update_state(y, model.predict(x, verbose=0))
    both.update_state([0, 1, 1], [0.2, 0.6, 0.4])
    np.testing.assert_allclose(auc.result(), both.result(), rtol=1e-6)


class BinaryTruePositives(keras.metrics.Metric):
    """Keras 3's documented subclass: state made in __init__, updated with assign."""

    def __init__(self, name="binary_true_positives", **kwargs):
        super().__init__(name=name, **kwargs)
        self.true_positives = self.add_variable(
            shape=(), initializer="zeros", name="true_positives"
        )

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = keras.ops.cast(y_true, "bool")
        y_pred = keras.ops.cast(y_pred, "bool")
        values = keras.ops.cast(keras.ops.logical_and(y_true, y_pred), self.dtype)
        if sample_weight is not None:
            values = values * keras.ops.cast(sample_weight, self.dtype)
        return self.true_positives.assign(self.true_positives + keras.ops.sum(values))

    def result(self):
        return self.true_positives


def test_a_keras_3_subclass_on_arrays_and_compiled():
    m = BinaryTruePositives()
    m.update_state([1, 1, 0, 1], [1, 0, 1, 1])
    assert m.result() == 2.0
    assert m([1, 1], [1, 1]) == 4.0  # __call__: update, then result
    m.reset_state()
    assert m.result() == 0.0
    inputs = keras.Input((1,))
    model = keras.Model(inputs, L.Lambda(lambda t: t)(inputs))
    model.compile("sgd", "mse", metrics=[m])
    x = np.array([[1.0], [0.0], [1.0]], np.float32)
    logs = model.evaluate(x, np.array([[1.0], [1.0], [0.0]], np.float32), verbose=0,
                          return_dict=True)  # fmt: skip
    assert logs["binary_true_positives"] == 1.0
    assert m.result() == 1.0


def test_call_on_tensors_runs_the_update_first():
    mean = keras.metrics.Mean()
    result = mean(sl.constant([1.0, 5.0]))
    assert isinstance(result, sl.Tensor)
    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        assert sess.run(result) == 3.0
        assert sess.run(result) == 3.0  # (1 + 5 + 1 + 5) / 4
