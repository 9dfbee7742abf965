"""Layers and models called on NumPy arrays compute values, as Keras 3's eager calls do."""

import numpy as np
import pytest

import sluice as sl


def test_a_layer_on_an_array_is_built_initialised_and_computed():
    dense = sl.layers.Dense(2, kernel_initializer="ones", bias_initializer="ones")
    got = dense(np.full((3, 4), 0.5, np.float64))  # float64 values: cast to the layer's dtype
    np.testing.assert_array_equal(got, np.full((3, 2), 3.0, np.float32))
    assert got.dtype == np.float32 and dense.built
    assert dense(np.ones((7, 4), np.float32)).shape == (7, 2)  # any batch size, one graph


def test_a_model_on_arrays_uses_the_weights_fit_trains():
    a = sl.Input((3,))
    model = sl.Model(a, sl.layers.Dense(1)(a))
    model.compile("sgd", "mse")
    x = np.random.default_rng(0).normal(size=(6, 3)).astype(np.float32)
    before = model(x)
    np.testing.assert_allclose(before, model.predict(x, verbose=0), rtol=1e-6)
    model.fit(x, np.ones((6, 1), np.float32), verbose=0)
    after = model(x)
    assert not np.allclose(before, after)
    np.testing.assert_allclose(after, model.predict(x, verbose=0), rtol=1e-6)
    two = sl.Model(a, {"y": model.output, "twice": sl.layers.Dense(1)(model.output)})
    got = two(x)  # the outputs' structure
    assert sorted(got) == ["twice", "y"]
    np.testing.assert_allclose(got["y"], after, rtol=1e-6)


def test_training_flag_and_integer_inputs():
    drop = sl.Sequential([sl.layers.Dropout(0.5, seed=3)])
    x = np.ones((4, 8), np.float32)
    np.testing.assert_array_equal(drop(x), x)  # inference by default
    assert (drop(x, training=True) == 0).any()
    embedding = sl.layers.Embedding(5, 2)
    assert embedding(np.array([[1, 2, 3]])).shape == (1, 3, 2)


def test_only_arrays_and_plain_keywords_are_computed():
    dense = sl.layers.Dense(2)
    with pytest.raises(TypeError, match="called on list"):
        dense([1.0, 2.0])
    with pytest.raises(TypeError, match="plain keyword arguments"):
        dense(np.ones((1, 2), np.float32), mask=np.ones((1,), bool))
