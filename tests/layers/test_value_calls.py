"""Layers and models called on arrays compute `sl.Array`s at once, as Keras 3's eager calls do,
keeping what the call changes (a stateful RNN's states, BatchNormalization's statistics)."""

import jax.numpy as jnp
import numpy as np
import pytest

import sluice as sl
from sluice._keras.layers import value_calls

RNG = np.random.default_rng(0)


def test_a_layer_on_an_array_is_built_initialised_and_computed():
    dense = sl.layers.Dense(2, kernel_initializer="ones", bias_initializer="ones")
    got = dense(np.full((3, 4), 0.5, np.float64))  # float64 values: cast to the layer's dtype
    np.testing.assert_array_equal(got, np.full((3, 2), 3.0, np.float32))
    assert got.dtype == np.float32 and dense.built
    assert dense(np.ones((7, 4), np.float32)).shape == (
        7,
        2,
    )  # a graph per shape, as Keras's eager shapes
    assert value_calls.cached_signatures(dense) == 2


def test_results_are_arrays_and_arrays_of_every_kind_are_taken():
    dense = sl.layers.Dense(3, kernel_initializer="ones")
    x = np.ones((2, 4), np.float32)
    got = dense(x)
    assert isinstance(got, sl.Array) and isinstance(got, np.ndarray)
    assert type(got.numpy()) is np.ndarray and got.shape == (2, 3) and got.dtype == np.float32
    for given in (got[:, :1].repeat(4, 1) / 4, jnp.ones((2, 4)), sl.Array(x)):  # sl.Array, JAX
        np.testing.assert_array_equal(dense(given), np.full((2, 3), 4.0))
    np.testing.assert_allclose(jnp.tanh(got), np.tanh(4.0) * np.ones((2, 3)), rtol=1e-6)
    add = sl.layers.Add()
    np.testing.assert_array_equal(add([x, 2 * x]), 3 * x)  # a list of arrays


def test_in_place_operators_rebind_as_on_a_jax_array():
    got = sl.layers.Dense(2, kernel_initializer="ones")(np.ones((1, 3), np.float32))
    assert not got.flags.writeable  # a call's result: its buffer is read-only
    same = got
    got *= 255  # as `x *= 255` on a JAX array: a new array, bound to `got`
    got += 1
    assert isinstance(got, sl.Array) and got.tolist() == [[766.0, 766.0]]
    assert same.tolist() == [[3.0, 3.0]]  # the old array is untouched
    ints = sl.Array(np.arange(3))
    ints //= 2
    ints **= 2
    assert ints.tolist() == [0, 0, 1]


def test_a_model_on_arrays_uses_the_weights_fit_trains():
    a = sl.Input((3,))
    model = sl.Model(a, sl.layers.Dense(1)(a))
    model.compile("sgd", "mse")
    x = RNG.normal(size=(6, 3)).astype(np.float32)
    before = model(x)
    np.testing.assert_allclose(before, model.predict(x, verbose=0), rtol=1e-6)
    model.fit(sl.Array(x), sl.Array(np.ones((6, 1), np.float32)), verbose=0)
    after = model(x)
    assert not np.allclose(before, after)
    np.testing.assert_allclose(after, model.predict(sl.Array(x), verbose=0), rtol=1e-6)
    two = sl.Model(a, {"y": model.output, "twice": sl.layers.Dense(1)(model.output)})
    got = two(x)  # the outputs' structure
    assert sorted(got) == ["twice", "y"] and isinstance(got["y"], sl.Array)
    np.testing.assert_allclose(got["y"], after, rtol=1e-6)


def test_calls_on_arrays_add_no_op_to_the_models_graph():
    inputs = sl.Input((None, 2))
    model = sl.Model(inputs, sl.layers.Dense(3)(inputs))
    before = len(model.graph.get_operations())
    for steps in (1, 2, 3):  # three signatures: traced in the model's private value graph
        assert model(np.ones((2, steps, 2), np.float32)).shape == (2, steps, 3)
    assert len(model.graph.get_operations()) == before
    assert value_calls.value_graph(model) is not model.graph


def test_dict_inputs_and_extra_arrays_as_arguments():
    a, b = sl.Input((2,), name="a"), sl.Input((2,), name="b")
    model = sl.Model({"a": a, "b": b}, sl.layers.Subtract()([a, b]))
    x, y = np.ones((3, 2), np.float32), np.full((3, 2), 0.25, np.float32)
    np.testing.assert_array_equal(model({"a": x, "b": y}), x - y)
    attention = sl.layers.Attention()
    q, v = RNG.normal(size=(2, 3, 4)).astype(np.float32), np.ones((2, 5, 4), np.float32)
    np.testing.assert_allclose(attention([q, v]), np.ones((2, 3, 4)), rtol=1e-6)


def test_training_flag_and_integer_inputs():
    drop = sl.Sequential([sl.layers.Dropout(0.5, seed=3)])
    x = np.ones((4, 8), np.float32)
    np.testing.assert_array_equal(drop(x), x)  # inference by default
    assert (drop(x, training=True) == 0).any()
    embedding = sl.layers.Embedding(5, 2)
    assert embedding(np.array([[1, 2, 3]])).shape == (1, 3, 2)


def test_batch_normalization_in_training_updates_its_moving_statistics():
    bn = sl.layers.BatchNormalization(momentum=0.5)
    x = RNG.normal(size=(8, 3)).astype(np.float32) + 2.0
    bn(x)  # inference: the statistics stay
    np.testing.assert_array_equal(sl.ops.convert_to_numpy(bn.moving_mean), np.zeros(3))
    out = bn(x, training=True)
    np.testing.assert_allclose(out.mean(0), np.zeros(3), atol=1e-5)  # the batch's statistics
    np.testing.assert_allclose(sl.ops.convert_to_numpy(bn.moving_mean), 0.5 * x.mean(0), rtol=1e-5)
    bn(x, training=True)
    np.testing.assert_allclose(sl.ops.convert_to_numpy(bn.moving_mean), 0.75 * x.mean(0), rtol=1e-5)


def _twin(layer, x, **kwargs):
    """`x` through a layer of `layer`'s class, not stateful, with its weights."""
    twin = type(layer)(layer.units)
    twin(np.zeros_like(x), **kwargs)  # built by a call of the same signature: one compile
    twin.set_weights(layer.get_weights())
    return twin(x, **kwargs)


@pytest.mark.parametrize(
    "kind", [sl.layers.SimpleRNN, pytest.param(sl.layers.LSTM, marks=pytest.mark.slow)]
)
def test_a_stateful_rnn_keeps_its_states_between_calls_on_arrays(kind):
    # the Keras RNN guide's cross-batch statefulness: paragraphs of one long sequence
    p1, p2 = (RNG.normal(size=(2, 4, 3)).astype(np.float32) for _ in range(2))
    lstm = kind(5, stateful=True)
    first = lstm(p1)
    second = lstm(p2)
    whole = _twin(lstm, np.concatenate([p1, p2], 1))
    np.testing.assert_allclose(second, whole, rtol=1e-5, atol=1e-6)
    lstm.reset_states()
    np.testing.assert_allclose(lstm(p1), first, rtol=1e-6)  # from zeros again


def test_a_stateful_rnns_states_are_values_to_set_and_to_reuse():
    p1, p2 = (RNG.normal(size=(2, 4, 3)).astype(np.float32) for _ in range(2))
    rnn = sl.layers.SimpleRNN(5, stateful=True)
    out = rnn(p1)
    (h,) = (sl.ops.convert_to_numpy(s) for s in rnn.states)  # the states hold values
    np.testing.assert_allclose(h, out, rtol=1e-6)
    np.testing.assert_array_equal(rnn.states[0].numpy(), np.asarray(rnn.states[0]))
    given = RNG.normal(size=(2, 5)).astype(np.float32)
    rnn.reset_states(states=[given])  # from given values
    np.testing.assert_allclose(rnn(p2), _twin(rnn, p2, initial_state=[given]), rtol=1e-5, atol=1e-6)
    # the guide's state reuse: another layer starts from this one's states
    existing_state = rnn.states
    new_rnn = sl.layers.SimpleRNN(5)
    got = new_rnn(p1, initial_state=existing_state)
    values = [sl.ops.convert_to_numpy(s) for s in existing_state]
    np.testing.assert_allclose(got, new_rnn(p1, initial_state=values), rtol=1e-6)


def test_value_calls_and_graph_calls_share_a_stateful_rnns_states():
    p1, p2 = (RNG.normal(size=(2, 4, 3)).astype(np.float32) for _ in range(2))
    rnn = sl.layers.SimpleRNN(5, stateful=True)
    rnn(p1)
    inputs = sl.Input((4, 3), batch_size=2)
    model = sl.Model(inputs, rnn(inputs))  # a graph call of the same layer
    got = model.predict(p2, batch_size=2, verbose=0)
    whole = _twin(rnn, np.concatenate([p1, p2], 1))
    np.testing.assert_allclose(got, whole, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="batch size of 2"):
        rnn(np.ones((3, 4, 3), np.float32))


def test_the_graphs_kept_per_layer_are_bounded(monkeypatch):
    monkeypatch.setattr(value_calls, "CACHE_SIZE", 3)
    flatten = sl.layers.Flatten()
    for n in range(1, 6):
        assert flatten(np.ones((2, n, 2), np.float32)).shape == (2, 2 * n)
    assert value_calls.cached_signatures(flatten) == 3
    flatten(np.ones((1, 5, 2), np.float32))  # the most recent signatures stay
    assert value_calls.cached_signatures(flatten) == 3


def test_arrays_inside_graph_code_are_constants_of_that_graph():
    class Shifted(sl.layers.Layer):
        def build(self, input_shape):
            self.inner = sl.layers.Dense(2, kernel_initializer="ones")

        def call(self, x):
            return x + self.inner(np.ones((1, 3), np.float32))  # a constant, not a value call

    layer = Shifted()
    y = layer(sl.Input((2,)))
    assert isinstance(y, sl.Tensor)
    np.testing.assert_allclose(layer(np.zeros((4, 2), np.float32)), np.full((4, 2), 3.0))


def test_only_arrays_variables_and_plain_values_are_computed():
    dense = sl.layers.Dense(2)
    with pytest.raises(TypeError, match="called on list"):
        dense([1.0, 2.0])
    with pytest.raises(TypeError, match="calls on arrays take arrays"):
        dense(np.ones((1, 2), np.float32), training=object())
    p = sl.placeholder(sl.float32, [1, 2])
    with pytest.raises(TypeError, match="Placeholder"):
        sl.layers.LSTM(2)(np.ones((1, 2, 2), np.float32), initial_state=[p, p])


def test_a_call_on_arrays_sees_the_batch_size_in_its_shapes():
    # the functional API guide's custom RNN: `ops.zeros((inputs.shape[0], units))` in `call`
    class Carry(sl.layers.Layer):
        def call(self, inputs):
            state = sl.ops.zeros((inputs.shape[0], 2))
            return state + sl.ops.sum(inputs, axis=1, keepdims=True)

    layer = Carry()
    np.testing.assert_array_equal(layer(np.ones((3, 4), np.float32)), np.full((3, 2), 4.0))
    assert layer(np.ones((1, 4), np.float32)).shape == (1, 2)


def test_a_weight_assigned_in_call_on_arrays_is_updated_and_read_after():
    # the subclassing guide's ComputeSum: assign_add in call, then return the weight
    class ComputeSum(sl.layers.Layer):
        def __init__(self, input_dim):
            super().__init__()
            self.total = self.add_weight(initializer="zeros", shape=(input_dim,), trainable=False)

        def call(self, inputs):
            self.total.assign_add(sl.ops.sum(inputs, axis=0))
            return self.total

    my_sum = ComputeSum(2)
    np.testing.assert_array_equal(my_sum(np.ones((2, 2), np.float32)), [2.0, 2.0])
    np.testing.assert_array_equal(my_sum(np.ones((2, 2), np.float32)), [4.0, 4.0])
    assert my_sum.weights == [my_sum.total] and my_sum.trainable_weights == []


def test_losses_after_a_call_on_arrays_are_that_calls_values():
    class ActivityRegularization(sl.layers.Layer):
        def call(self, inputs):
            self.add_loss(0.5 * sl.ops.mean(inputs))
            return inputs

    class Outer(sl.layers.Layer):
        def __init__(self):
            super().__init__()
            self.reg = ActivityRegularization()
            self.dense = sl.layers.Dense(
                2, kernel_initializer="ones", kernel_regularizer=sl.regularizers.l2(1e-3)
            )

        def call(self, inputs):
            return self.dense(self.reg(inputs))

    layer = Outer()
    assert layer.losses == []
    layer(np.full((1, 3), 2.0, np.float32))
    got = [float(v) for v in layer.losses]
    np.testing.assert_allclose(got, [1.0, 1e-3 * 6], rtol=1e-6)  # add_loss, then the l2 term
    layer(np.full((1, 3), 4.0, np.float32))  # reset by the next call
    np.testing.assert_allclose([float(v) for v in layer.losses], [2.0, 6e-3], rtol=1e-6)
    assert [float(v) for v in layer.reg.losses] == [2.0]


def test_a_stateful_rnn_on_arrays_after_a_functional_model_in_the_default_graph():
    # the RNN guide: a seq2seq functional model is built, then LSTM(stateful=True)(paragraph)
    inputs = sl.Input((None, 5))
    sl.Model(inputs, sl.layers.LSTM(3)(inputs))
    lstm = sl.layers.LSTM(3, stateful=True)
    paragraph = np.ones((2, 4, 5), np.float32)
    first, second = lstm(paragraph), lstm(paragraph)
    assert first.shape == second.shape == (2, 3) and not np.allclose(first, second)


def test_masks_of_calls_on_arrays_are_keras_masks_on_the_arrays():
    # the masking guide: `embedding(padded)._keras_mask`, then a layer splitting its input's mask
    embedding = sl.layers.Embedding(10, 2, mask_zero=True)
    out = embedding(np.array([[3, 1, 0, 0]]))
    np.testing.assert_array_equal(out._keras_mask, [[True, True, False, False]])

    class TemporalSplit(sl.layers.Layer):  # no `mask` in call: compute_mask still sees it
        def call(self, inputs):
            return sl.ops.split(inputs, 2, axis=1)

        def compute_mask(self, inputs, mask=None):
            return None if mask is None else sl.ops.split(mask, 2, axis=1)

    first, second = TemporalSplit()(out)
    np.testing.assert_array_equal(first._keras_mask, [[True, True]])
    np.testing.assert_array_equal(second._keras_mask, [[False, False]])
