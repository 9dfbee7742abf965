"""tf.keras 2's custom `train_step` (`self.compiled_loss(..., regularization_losses=...)`,
`self.compiled_metrics.update_state`), as the Keras "trainer pattern" example writes it."""

import numpy as np
import pytest

import sluice as sl


class Trainer(sl.Model):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def train_step(self, data):
        x, y = data
        with sl.GradientTape() as tape:
            y_pred = self.model(x, training=True)
            loss = self.compiled_loss(y, y_pred, regularization_losses=self.losses)
        variables = self.trainable_variables
        self.optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        self.compiled_metrics.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}

    def call(self, x):
        return self.model(x)


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 4)).astype("float32")
    return x, (x.sum(axis=1) > 0).astype("int32")


def test_the_trainer_pattern_logs_the_compiled_loss_with_regularization_and_metrics():
    x, y = _data()
    inner = sl.Sequential(
        [
            sl.Input((4,)),
            sl.layers.Dense(2, kernel_regularizer=sl.regularizers.L2(0.1)),
            sl.layers.Softmax(),
        ]
    )
    kernel, bias = (np.asarray(w) for w in inner.get_weights())
    model = Trainer(inner)
    model.compile(sl.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy", metrics=["acc"])
    history = model.fit(x, y, batch_size=32, epochs=3, verbose=0)
    assert sorted(history.history) == ["acc", "loss"]
    losses = history.history["loss"]
    assert losses[2] < losses[0]
    # one batch per epoch: the first logged loss is that of the initial weights, with the L2
    logits = x @ kernel + bias
    probs = np.exp(logits - logits.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    first = -np.log(probs[np.arange(32), y]).mean() + 0.1 * (kernel**2).sum()
    np.testing.assert_allclose(losses[0], first, rtol=1e-5)
    accuracy = (probs.argmax(1) == y).mean()
    np.testing.assert_allclose(history.history["acc"][0], accuracy, rtol=1e-6)


def test_compiled_loss_is_none_without_a_loss_and_compiled_metrics_is_empty():
    model = Trainer(sl.Sequential([sl.Input((4,)), sl.layers.Dense(1)]))
    model.compile("sgd")
    assert model.compiled_loss is None
    model.compiled_metrics.update_state(None, None)  # nothing compiled: nothing to update
    assert model.compiled_metrics.metrics == []


@pytest.mark.parametrize("weight", [None, 0.5])
def test_compiled_loss_adds_regularization_losses_to_the_weighted_loss(weight):
    x, y = _data()
    inner = sl.Sequential([sl.Input((4,)), sl.layers.Dense(1)])
    model = Trainer(inner)
    model.compile("sgd", loss="mse", loss_weights=weight)
    graph = sl.Graph()
    with graph.as_default():
        xs, ys = sl.constant(x), sl.constant(y.astype("float32")[:, None])
        total = model.compiled_loss(ys, inner(xs), regularization_losses=[sl.constant(2.0)])
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())
            value = sess.run(total)
    kernel, bias = (np.asarray(w) for w in inner.get_weights())
    mse = ((x @ kernel + bias - y[:, None]) ** 2).mean()
    np.testing.assert_allclose(value, mse * (weight or 1.0) + 2.0, rtol=1e-5)
