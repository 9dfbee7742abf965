"""Layers that can return their input unchanged (Dropout in inference or at rate 0, a linear
Activation, an identity Lambda, a Reshape to the same shape, a Sequential of those) inside
functional models: the model builds, finds every layer, trains, predicts, and saves."""

import numpy as np
import pytest

import sluice as sl
from sluice import layers as L

RNG = np.random.default_rng(0)
X = RNG.normal(size=(32, 4)).astype(np.float32)
Y = (X.sum(axis=1) > 0).astype(np.int32)

PASSTHROUGH = {
    "dropout": lambda: L.Dropout(0.5, seed=1),
    "dropout_rate_0": lambda: L.Dropout(0.0),
    "linear_activation": lambda: L.Activation("linear"),
    "identity_lambda": lambda: L.Lambda(lambda t: t),
    "same_shape_reshape": lambda: L.Reshape((8,)),
    "sequential_of_dropout": lambda: sl.Sequential([L.Dropout(0.5, seed=2)]),
}


@pytest.mark.parametrize("make", PASSTHROUGH.values(), ids=PASSTHROUGH.keys())
def test_a_passthrough_layer_between_dense_layers(make, tmp_path):
    sl.utils.set_random_seed(0)
    inputs = sl.Input((4,))
    middle = make()
    h = L.Dense(8, activation="relu")(inputs)
    outputs = L.Dense(2, activation="softmax")(middle(h))
    model = sl.Model(inputs, outputs)
    assert [type(layer) for layer in model.layers[1:]] == [L.Dense, type(middle), L.Dense]
    model.compile(sl.optimizers.Adam(0.05), "sparse_categorical_crossentropy")
    history = model.fit(X, Y, batch_size=8, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    predicted = model.predict(X, verbose=0)
    np.testing.assert_array_equal(predicted, model.predict(X, verbose=0))  # inference: no noise
    path = str(tmp_path / "model.weights.h5")
    model.save_weights(path)
    copy = sl.Model(inputs, outputs)  # the same layers: load into a fresh copy of the weights
    copy.set_weights([np.zeros_like(w) for w in model.get_weights()])
    copy.load_weights(path)
    np.testing.assert_allclose(copy.predict(X, verbose=0), predicted, rtol=1e-6)


def test_a_passthrough_layer_on_the_input_and_as_the_output():
    inputs = sl.Input((4,))
    outputs = L.Dropout(0.5)(L.Dense(3)(L.Activation("linear")(inputs)))
    model = sl.Model(inputs, outputs)
    assert [type(layer) for layer in model.layers] == [
        L.InputLayer,
        L.Activation,
        L.Dense,
        L.Dropout,
    ]
    kernel, bias = model.get_weights()
    np.testing.assert_allclose(model.predict(X, verbose=0), X @ kernel + bias, rtol=1e-5, atol=1e-6)


def test_dropout_applies_in_the_training_forward_pass_of_a_functional_model():
    sl.utils.set_random_seed(0)
    inputs = sl.Input((4,))
    outputs = L.Dropout(0.5, seed=3)(inputs)
    model = sl.Model(inputs, outputs)
    trained = model._forward(model._input_struct, training=True)
    model._initialize()  # the Dropout's seed generator state, which the trace reads
    with model.graph.as_default():
        value = model.session.run(trained, {model.inputs[0]: np.ones((8, 4), np.float32)})
    assert set(np.unique(value)) <= {0.0, 2.0} and 0.0 in value and 2.0 in value
