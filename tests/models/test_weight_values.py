"""Keras 3's values on weights outside graphs (`v.value`, `v.numpy()`, `np.asarray(v)`,
`v.assign(array)`, `v.path`), while TF1 graph code keeps `v.value()` and assign ops."""

import jax
import numpy as np
import pytest

import sluice as sl


def test_weights_give_and_take_values_outside_graphs():
    model = sl.Sequential([sl.Input((3,)), sl.layers.Dense(2, name="d")])
    kernel, bias = model.trainable_variables
    assert kernel.path == "d/kernel" and bias.path == "d/bias"
    assert isinstance(kernel.value, jax.Array) and kernel.value.shape == (3, 2)
    np.testing.assert_array_equal(np.asarray(kernel), model.get_weights()[0])
    kernel.assign(np.ones((3, 2)))
    bias.assign_add(np.full(2, 0.5))
    np.testing.assert_allclose(model.predict(np.ones((1, 3)), verbose=0), [[3.5, 3.5]])
    bias.assign_sub(np.full(2, 0.5))
    np.testing.assert_array_equal(bias.numpy(), [0.0, 0.0])
    changed = kernel.numpy()
    changed[0, 0] = 9.0  # a copy: the weight is unchanged
    assert kernel.numpy()[0, 0] == 1.0
    with pytest.raises(ValueError, match="shape"):
        kernel.assign(np.ones((2, 2)))


def test_values_follow_training_and_shared_models():
    inner = sl.Sequential([sl.Input((2,)), sl.layers.Dense(1, kernel_initializer="ones")])
    x = sl.Input((2,))
    outer = sl.Model(x, inner(x))
    outer.compile(sl.optimizers.SGD(0.1), "mse")
    outer.fit(np.ones((4, 2), "float32"), np.zeros((4, 1), "float32"), verbose=0)
    # numpy(): this test runs inside a graph (conftest) that holds the shared weight's mirror,
    # where `value` is TF1's method
    np.testing.assert_allclose(inner.trainable_variables[0].numpy(), [[0.6], [0.6]], rtol=1e-6)


def test_tf1_graph_code_keeps_ops_and_session_values():
    with sl.Graph().as_default():
        x = sl.placeholder(sl.float32, [None, 3])
        dense = sl.layers.Dense(2)
        y = dense(x)
        zero = dense.kernel.assign(np.zeros((3, 2), np.float32))
        assert isinstance(zero, sl.Tensor)
        assert isinstance(dense.kernel.value(), sl.Tensor)
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())
            sess.run(zero)
            np.testing.assert_array_equal(sess.run(y, {x: np.ones((1, 3))}), [[0.0, 0.0]])
        with pytest.raises(TypeError, match="session"):
            dense.kernel.numpy()


def test_a_built_by_hand_layer_is_built_once():
    dense = sl.layers.Dense(2)
    dense.build((None, 3))
    assert dense.built and len(dense.weights) == 2
    out = dense(np.ones((1, 3), np.float32))
    assert np.asarray(out).shape == (1, 2) and len(dense.weights) == 2


def test_weights_are_in_layer_order_whatever_is_frozen():
    # Keras 3: each layer's weights in turn, so freezing a layer does not reorder get_weights
    model = sl.Sequential([sl.Input((3,)), sl.layers.Dense(4), sl.layers.Dense(2)])
    model.layers[0].trainable = False
    assert [w.path.split("/")[-1] for w in model.weights] == ["kernel", "bias"] * 2
    assert [w.shape[0] for w in model.weights] == [3, 4, 4, 2]
    assert model.trainable_weights == model.weights[2:]
    assert model.non_trainable_weights == model.weights[:2]
    assert [v.shape for v in model.get_weights()] == [(3, 4), (4,), (4, 2), (2,)]
