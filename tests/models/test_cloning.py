"""clone_model: Sequential, functional (shared layers, several inputs and outputs, nested
models, input_tensors, clone_function) and subclassed models get new layers of the same
config; errors as Keras's."""

import json

import numpy as np
import pytest

import sluice as sl
from sluice import layers as L


def _configs(model):
    return json.dumps([sl.layers.serialize(layer) for layer in model.layers])


def test_sequential_clone_has_the_same_config_and_new_weights():
    model = sl.Sequential([sl.Input((4,)), L.Dense(3, activation="relu"), L.Dense(1)], name="mlp")
    clone = sl.models.clone_model(model)
    assert isinstance(clone, sl.Sequential) and clone.name == "mlp"
    assert clone.output_shape == (None, 1) and _configs(clone) == _configs(model)
    assert all(a is not b for a, b in zip(clone.layers, model.layers))
    assert not np.array_equal(clone.get_weights()[0], model.get_weights()[0])
    clone.set_weights(model.get_weights())
    x = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(clone.predict(x, verbose=0), model.predict(x, verbose=0))

    on_tensor = sl.models.clone_model(model, input_tensors=sl.Input((4,)))
    assert on_tensor.output_shape == (None, 1)
    with pytest.raises(ValueError, match="single tensor"):
        sl.models.clone_model(model, input_tensors=[sl.Input((4,)), sl.Input((4,))])


def test_functional_clone_keeps_sharing_nesting_and_structure():
    inner_x = sl.Input((3,))
    inner = sl.Model(inner_x, L.Dense(3, name="inner_dense")(inner_x), name="inner")
    a, b = sl.Input((3,), name="a"), sl.Input((3,), name="b")
    shared = L.Dense(3, name="shared")
    total = L.Add()([shared(a), shared(b)])
    model = sl.Model({"a": a, "b": b}, [inner(total), L.Dense(1, name="head")(total)])

    clone = sl.models.clone_model(model)
    assert [layer.name for layer in clone.layers] == [layer.name for layer in model.layers]
    assert json.dumps(clone.get_config()) == json.dumps(model.get_config())
    assert clone.graph is not model.graph and set(clone.input) == {"a", "b"}
    shared_clone = clone.get_layer("shared")
    assert shared_clone is not shared and len(shared_clone.trainable_weights) == 2
    clone.set_weights(model.get_weights())
    rng = np.random.default_rng(0)
    x = {"a": rng.normal(size=(2, 3)).astype("float32"),
         "b": rng.normal(size=(2, 3)).astype("float32")}  # fmt: skip
    for want, got in zip(model.predict(x, verbose=0), clone.predict(x, verbose=0)):
        np.testing.assert_allclose(got, want, atol=1e-6)


def test_clone_function_and_input_tensors():
    x = sl.Input((4,))
    model = sl.Model(x, L.Dense(2, name="out")(L.Dense(3, name="hidden")(x)))
    seen = []

    def keep_hidden(layer):
        seen.append(layer.name)
        if layer.name == "hidden":
            return layer  # shared with the original, weights and all
        return L.Dense.from_config({**layer.get_config(), "activation": "sigmoid"})

    new_x = sl.Input((4,))
    clone = sl.models.clone_model(model, input_tensors=new_x, clone_function=keep_hidden)
    assert seen == ["hidden", "out"] and clone.get_layer("hidden") is model.get_layer("hidden")
    assert clone.input is new_x and clone.layers[-1].get_config()["activation"] == "sigmoid"
    assert clone.layers[-1].name == "out_1"  # "out" is taken in the inputs' graph
    with pytest.raises(ValueError, match="must return a layer"):
        sl.models.clone_model(model, clone_function=lambda layer: None)
    with pytest.raises(ValueError, match="has 1 inputs"):
        sl.models.clone_model(model, input_tensors=[sl.Input((4,)), sl.Input((4,))])


class Doubler(sl.Model):
    def __init__(self, units=2, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.dense = L.Dense(units)

    def call(self, inputs):
        return self.dense(inputs) * 2.0

    def get_config(self):
        return {**super().get_config(), "units": self.units}


def test_subclassed_clone_goes_through_its_config():
    model = Doubler(units=3, name="doubler")
    clone = sl.models.clone_model(model)
    assert type(clone) is Doubler and clone.units == 3 and clone.name == "doubler"
    assert clone.predict(np.ones((1, 2), np.float32), verbose=0).shape == (1, 3)
    with pytest.raises(ValueError, match="only supported for Sequential models or Functional"):
        sl.models.clone_model(model, clone_function=lambda layer: layer)
