"""Keras 3's JAX training loop: `stateless_call`, `optimizer.build` / `stateless_apply`, as in
Keras's guide "Writing a training loop from scratch in JAX", with `import sluice as keras`."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import sluice as keras
import sluice as sl
from sluice._keras.layers.stateless import assign_variables, variable_values


def _mlp(batchnorm=False):
    inputs = keras.Input(shape=(6,))
    x = keras.layers.Dense(8, activation="relu")(inputs)
    if batchnorm:
        x = keras.layers.BatchNormalization()(x)
    outputs = keras.layers.Dense(2)(x)
    return keras.Model(inputs, outputs)


def _data(n=32):
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, 6)).astype("float32"), rng.normal(size=(n, 2)).astype("float32")


def _state(model, optimizer=None):
    state = (
        variable_values(model.trainable_variables),
        variable_values(model.non_trainable_variables),
    )
    return state + ((variable_values(optimizer.variables),) if optimizer else ())


def test_guide_loop_gives_the_losses_and_weights_of_fit():
    x, y = _data()
    model = _mlp()
    initial = variable_values(model.weights)
    optimizer = keras.optimizers.Adam(learning_rate=1e-2)

    def compute_loss_and_updates(trainable, non_trainable, x, y):
        y_pred, non_trainable = model.stateless_call(trainable, non_trainable, x)
        return jnp.mean((y - y_pred) ** 2), non_trainable

    grad_fn = jax.value_and_grad(compute_loss_and_updates, has_aux=True)

    @jax.jit
    def train_step(state, data):
        trainable, non_trainable, optimizer_values = state
        (loss, non_trainable), grads = grad_fn(trainable, non_trainable, *data)
        trainable, optimizer_values = optimizer.stateless_apply(optimizer_values, grads, trainable)
        return loss, (trainable, non_trainable, optimizer_values)

    optimizer.build(model.trainable_variables)
    state = _state(model, optimizer)
    losses = []
    for _ in range(2):
        for i in range(0, len(x), 8):
            loss, state = train_step(state, (x[i : i + 8], y[i : i + 8]))
            losses.append(float(loss))
    trained = state[0]
    assert variable_values(model.weights)[0] == pytest.approx(initial[0])  # no side effect

    assign_variables(model.weights, initial)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-2), loss="mse")
    logged = []
    callback = keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: logged.append(logs["loss"])
    )
    model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0, callbacks=[callback])
    running = [np.mean(losses[4 * e : 4 * e + k + 1]) for e in range(2) for k in range(4)]
    np.testing.assert_allclose(running, logged, rtol=1e-5)
    for ours, fits in zip(trained, variable_values(model.trainable_variables)):
        np.testing.assert_allclose(ours, fits, rtol=1e-5, atol=1e-7)


def test_values_written_back_are_the_model_s():
    x, _ = _data(4)
    model = _mlp()
    trainable, non_trainable = _state(model)
    # outside a trace the variables themselves stand for their values, as in Keras
    direct, _ = model.stateless_call(model.trainable_variables, model.non_trainable_variables, x)
    np.testing.assert_allclose(direct, model.predict(x, verbose=0), rtol=1e-5)
    doubled = [2 * v for v in trainable]
    expected, _ = model.stateless_call(doubled, non_trainable, x)
    assign_variables(model.trainable_variables, doubled)
    np.testing.assert_allclose(model.predict(x, verbose=0), expected, rtol=1e-5)


def test_jax_grad_equals_sl_gradients():
    x, y = _data(5)
    model = _mlp(batchnorm=True)
    trainable, non_trainable = _state(model)

    def loss(trainable):
        y_pred, _ = model.stateless_call(trainable, non_trainable, x, training=True)
        return jnp.mean((y - y_pred) ** 2)

    grads = jax.jit(jax.grad(loss))(trainable)
    g = model.graph
    with g.as_default():
        xp, yp = sl.placeholder(sl.float32, [None, 6]), sl.placeholder(sl.float32, [None, 2])
        graph_loss = sl.reduce_mean(sl.square(yp - model(xp, training=True)))
        graph_grads = sl.gradients(graph_loss, model.trainable_variables)
    expected = model.session.run(graph_grads, {xp: x, yp: y})
    assert len(grads) == len(expected) == 6
    for ours, theirs in zip(grads, expected):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5 * np.abs(theirs).max())


def test_a_frozen_sublayer_moves_its_weights_to_the_non_trainable_values():
    x, _ = _data(3)
    model = _mlp()
    trainable, _ = _state(model)
    model.layers[1].trainable = False
    frozen, rest = trainable[:2], trainable[2:]
    out, new = model.stateless_call(rest, frozen, x)
    np.testing.assert_allclose(out, model.predict(x, verbose=0), rtol=1e-5)
    assert len(new) == 2
    with pytest.raises(ValueError, match="length 4, but expected 2"):
        model.stateless_call(trainable, [], x)


def test_batchnorm_statistics_update_only_in_training():
    x, _ = _data(8)
    model = _mlp(batchnorm=True)
    trainable, non_trainable = _state(model)
    bn = model.layers[2]
    assert [v.op.name for v in model.non_trainable_variables] == [
        v.op.name for v in bn.non_trainable_variables
    ]
    out, same = model.stateless_call(trainable, non_trainable, x)
    np.testing.assert_allclose(out, model.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    for a, b in zip(same, non_trainable):
        np.testing.assert_array_equal(a, b)

    out, (mean, var) = model.stateless_call(trainable, non_trainable, x, training=True)
    h = np.maximum(x @ np.asarray(trainable[0]) + np.asarray(trainable[1]), 0)
    np.testing.assert_allclose(mean, 0.99 * non_trainable[0] + 0.01 * h.mean(0), rtol=1e-5)
    np.testing.assert_allclose(var, 0.99 * non_trainable[1] + 0.01 * h.var(0), rtol=1e-4)
    # nothing was written: the model still holds its own statistics
    for a, b in zip(variable_values(model.non_trainable_variables), non_trainable):
        np.testing.assert_array_equal(a, b)


class Noise(keras.layers.Layer):
    """Adds uniform noise drawn from a seed held in a non-trainable weight, which the call
    advances (as a Keras 3 SeedGenerator does)."""

    def build(self, input_shape):
        self.seed = self.add_weight(
            shape=(2,), initializer="zeros", dtype="int32", trainable=False, name="seed"
        )

    def call(self, x, training=False):
        if not training:
            return x
        noise = sl.random.stateless_uniform(sl.shape(x), seed=self.seed.value())
        self.add_update(self.seed.assign_add([0, 1]))
        return x + noise


def test_random_draws_depend_on_the_seed_state_passed_not_on_call_count():
    x = np.zeros((2, 3), np.float32)
    model = keras.Sequential([keras.Input((3,)), Noise()])
    (seed,) = variable_values(model.non_trainable_variables)
    first, (advanced,) = model.stateless_call([], [seed], x, training=True)
    again, _ = model.stateless_call([], [seed], x, training=True)
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(advanced, [0, 1])
    other, _ = jax.jit(lambda s: model.stateless_call([], [s], x, training=True))(advanced)
    assert not np.allclose(other, first)
    same, _ = model.stateless_call([], [seed], x)  # inference: no noise, state unchanged
    np.testing.assert_array_equal(same, x)


def test_dropout_depends_on_the_seed_state_passed():
    x = np.ones((4, 16), np.float32)
    model = keras.Sequential([keras.Input((16,)), keras.layers.Dropout(0.5, seed=1)])
    dropout = model.layers[0]
    # Keras's lists: the seed state is a variable of the layer, not one of its weights
    assert model.weights == [] and model.trainable_variables == []
    assert model.variables == model.non_trainable_variables == [dropout.seed_generator.state]
    (state,) = variable_values(model.non_trainable_variables)
    first, (new_state,) = model.stateless_call([], [state], x, training=True)
    again, _ = model.stateless_call([], [state], x, training=True)
    np.testing.assert_array_equal(first, again)  # the same state: the same mask
    np.testing.assert_array_equal(new_state, np.asarray(state) + [0, 1])
    other, _ = jax.jit(lambda s: model.stateless_call([], [s], x, training=True))(new_state)
    assert not np.array_equal(other, first)  # the advanced state: another mask
    assert set(np.unique(first)) <= {0.0, 2.0} and set(np.unique(other)) <= {0.0, 2.0}
    same, (kept,) = model.stateless_call([], [state], x)  # inference: no draw
    np.testing.assert_array_equal(same, x)
    np.testing.assert_array_equal(kept, state)
    np.testing.assert_array_equal(variable_values([dropout.seed_generator.state])[0], state)


def _noisy_model(rnn=False):
    inputs = keras.Input((3, 2))
    h = keras.layers.Flatten()(inputs)
    if rnn:
        h = keras.layers.LSTM(4, dropout=0.5, recurrent_dropout=0.5, seed=3)(inputs)
    h = keras.layers.GaussianNoise(0.3, seed=4)(h)
    h = keras.layers.Dropout(0.5, seed=5)(h)
    return keras.Model(inputs, keras.layers.Dense(1)(h))


def test_the_seed_states_of_random_layers_and_rnn_cells_are_their_variables():
    model = _noisy_model(rnn=True)
    assert [v.path for v in model.non_trainable_variables] == [
        "lstm/lstm_cell/seed_generator/seed_generator_state",
        "gaussian_noise/seed_generator/seed_generator_state",
        "dropout/seed_generator/seed_generator_state",
    ]
    assert len(model.weights) == 5  # the LSTM's 3 and the Dense's 2: no seed state
    # every state once, each layer's in the model's order (Keras's `variables`)
    paths = [v.path for v in model.variables]
    assert paths[:4] == [
        "lstm/lstm_cell/kernel",
        "lstm/lstm_cell/recurrent_kernel",
        "lstm/lstm_cell/bias",
        "lstm/lstm_cell/seed_generator/seed_generator_state",
    ]
    assert len(paths) == len(set(paths)) == 8


def _check_jitted_draws(model, draws_per_state):
    trainable, non_trainable = _state(model)
    x = np.ones((2, 3, 2), np.float32)

    @jax.jit
    def call(non_trainable):
        return model.stateless_call(trainable, non_trainable, x, training=True)

    first, advanced = call(non_trainable)
    again, _ = call(non_trainable)
    np.testing.assert_array_equal(first, again)
    for old, new, draws in zip(non_trainable, advanced, draws_per_state):
        np.testing.assert_array_equal(new, np.asarray(old) + [0, draws])
    assert not np.array_equal(call(advanced)[0], first)


def test_a_jitted_call_threads_the_seed_states_of_random_layers():
    _check_jitted_draws(_noisy_model(), (1, 1))


@pytest.mark.slow  # ~10 s: the XLA compile of an LSTM
def test_a_jitted_call_threads_the_seed_state_of_an_rnn_cell():
    # the LSTM draws its input and recurrent masks, the others one draw each
    _check_jitted_draws(_noisy_model(rnn=True), (2, 1, 1))


@pytest.mark.slow  # ~10 s on 2 cores: two XLA compiles of an LSTM and its gradient
def test_lstm_of_static_length_is_differentiable():
    x = np.random.default_rng(1).normal(size=(3, 4, 2)).astype("float32")
    model = keras.Sequential([keras.Input((None, 2)), keras.layers.LSTM(3), keras.layers.Dense(1)])
    trainable, non_trainable = _state(model)  # the cell's seed generator state

    def loss(trainable):
        y, _ = model.stateless_call(trainable, non_trainable, x)
        return jnp.mean(y**2)

    grads = jax.jit(jax.grad(loss))(trainable)
    g = model.graph
    with g.as_default():
        xp = sl.placeholder(sl.float32, [3, 4, 2])
        graph_grads = sl.gradients(sl.reduce_mean(sl.square(model(xp))), model.trainable_variables)
    for ours, theirs in zip(grads, model.session.run(graph_grads, {xp: x})):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-7)


def test_optax_drives_stateless_call():
    x, y = _data(16)
    model = _mlp()
    params, _ = _state(model)
    tx = optax.adam(1e-2)
    opt_state = tx.init(params)

    @jax.jit
    def step(params, opt_state):
        def loss(params):
            return jnp.mean((model.stateless_call(params, [], x)[0] - y) ** 2)

        value, grads = jax.value_and_grad(loss)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    losses = []
    for _ in range(20):
        params, opt_state, value = step(params, opt_state)
        losses.append(float(value))
    assert losses[-1] < 0.8 * losses[0]


def test_return_losses_gives_the_call_losses_then_the_weight_regularizers():
    class WithLoss(keras.layers.Layer):
        def call(self, x):
            self.add_loss(sl.reduce_sum(x))
            return x

    inputs = keras.Input((3,))
    h = keras.layers.Dense(2, kernel_regularizer=keras.layers.regularizers.L2(0.5))(
        WithLoss()(inputs)
    )
    model = keras.Model(inputs, h)
    (trainable, _) = _state(model)
    x = np.ones((2, 3), np.float32)
    _, _, losses = model.stateless_call(trainable, [], x, return_losses=True)
    kernel = np.asarray(trainable[0])
    np.testing.assert_allclose(losses, [6.0, 0.5 * np.sum(kernel**2)], rtol=1e-6)
    doubled = [2 * trainable[0], trainable[1]]
    _, _, losses = model.stateless_call(doubled, [], x, return_losses=True)
    np.testing.assert_allclose(losses[1], 2.0 * np.sum(kernel**2), rtol=1e-6)


def test_stateless_call_checks_its_arguments():
    model = _mlp()
    trainable, _ = _state(model)
    x = np.ones((1, 6), np.float32)
    with pytest.raises(ValueError, match="trainable_variables.*length 3, but expected 4"):
        model.stateless_call(trainable[:3], [], x)
    with pytest.raises(ValueError, match="has shape"):
        model.stateless_call([trainable[1]] + trainable[1:], [], x)
    with pytest.raises(ValueError, match="must be built"):
        keras.layers.Dense(2).stateless_call([], [], x)


def test_optimizer_build_creates_keras_ordered_state():
    model = _mlp()
    optimizer = keras.optimizers.SGD(0.1, momentum=0.9)
    assert not optimizer.built
    optimizer.build(model.trainable_variables)
    names = [v.op.name for v in optimizer.variables]
    assert names[:2] == ["SGD/iteration", "SGD/learning_rate"]
    assert sorted(names[2:]) == sorted(f"SGD/{v.op.name}/trace" for v in model.trainable_variables)
    assert optimizer.variables() == optimizer.variables  # TF1's method spelling too
    values = variable_values(optimizer.variables)
    assert int(values[0]) == 0 and float(values[1]) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="corresponding 1:1"):
        optimizer.stateless_apply(values[:2], [], [])


def test_optimizer_variables_are_a_list_to_jax_tree_functions():
    model = _mlp()
    optimizer = keras.optimizers.SGD(0.1)
    optimizer.build(model.trainable_variables)
    # JAX >= 0.10 takes no variable into jax.jit (Keras's neither): their values go in, and
    # jax.tree.map over the variables is how a loop gets them (`.value`: Keras 3's attribute
    # for the optimizer's variables, outside any graph, from build on)
    values = jax.tree.map(lambda v: v.value, optimizer.variables)
    assert int(values[0]) == 0 and float(values[1]) == pytest.approx(0.1)
    assert optimizer.variables[0].numpy() == 0
    grads = [jnp.ones(v.shape, jnp.float32) for v in model.trainable_variables]
    trainable = variable_values(model.trainable_variables)
    trainable, optimizer_values = jax.jit(optimizer.stateless_apply)(values, grads, trainable)
    assert int(optimizer_values[0]) == 1
    for new, old in zip(trainable, variable_values(model.trainable_variables)):
        np.testing.assert_allclose(new, np.asarray(old) - 0.1, rtol=1e-6)


def test_stateless_apply_follows_a_schedule_at_iteration():
    schedule = optax.exponential_decay(0.5, transition_steps=1, decay_rate=0.5)
    w = [jnp.ones((2,), jnp.float32)]
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, use_bias=False)])
    optimizer = keras.optimizers.SGD(schedule)
    optimizer.build(model.trainable_variables)
    values = variable_values(optimizer.variables)
    assert [v.op.name for v in optimizer.variables] == ["SGD/iteration"]
    w = [jnp.ones((2, 1), jnp.float32)]
    grad = [jnp.ones((2, 1), jnp.float32)]
    for rate in (0.5, 0.25, 0.125):
        before = w[0]
        w, values = jax.jit(optimizer.stateless_apply)(values, grad, w)
        np.testing.assert_allclose(before - w[0], rate, rtol=1e-6)
    assert int(values[0]) == 3


def test_models_sharing_layers_across_graphs():
    generator = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    discriminator = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    z = keras.Input((4,))
    gan = keras.Model(z, discriminator(generator(z)))  # weights first built in two graphs
    noise = np.random.default_rng(2).normal(size=(5, 4)).astype("float32")
    trainable, non_trainable = _state(gan)
    out, _ = gan.stateless_call(trainable, non_trainable, noise)
    np.testing.assert_allclose(out, gan.predict(noise, verbose=0), rtol=1e-5)
    optimizer = keras.optimizers.SGD(0.1)
    optimizer.build(gan.trainable_variables)

    @jax.jit
    def step(trainable, optimizer_values):
        def loss(trainable):
            return jnp.mean(gan.stateless_call(trainable, [], noise)[0] ** 2)

        grads = jax.grad(loss)(trainable)
        return optimizer.stateless_apply(optimizer_values, grads, trainable)

    new, optimizer_values = step(trainable, variable_values(optimizer.variables))
    assign_variables(gan.trainable_variables, new)
    assign_variables(optimizer.variables, optimizer_values)
    for ours, theirs in zip(variable_values(generator.trainable_variables), new[:2]):
        np.testing.assert_array_equal(ours, theirs)  # written back into the shared layers
    assert int(variable_values(optimizer.variables)[0]) == 1
