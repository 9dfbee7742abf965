"""Cross-batch statefulness on arrays, after the Keras guide "Working with RNNs": a stateful LSTM
called on three paragraphs in turn keeps its state between calls, reset_states() starts again,
and its states become the initial_state of a new layer. Then a small stateful model is trained
on a long series cut into consecutive batches, saved as .keras, loaded in a new process and
trained on. Tiny: paragraphs of 4 x 5 x 6, LSTM(8)."""

import subprocess
import sys

import numpy as np

import sluice as keras
from sluice import layers, ops

rng = np.random.default_rng(0)
batch_size, timesteps, features = 4, 5, 6


def sine_batches(n_batches=6):
    """A long noisy sine per row, cut into consecutive windows: batch k continues batch k-1."""
    t = np.arange(n_batches * timesteps + 1, dtype="float32")
    phases = np.linspace(0, np.pi, batch_size, dtype="float32")[:, None]
    series = np.sin(t[None, :] / 3 + phases)  # [batch, time]
    x = series[:, :-1].reshape(batch_size, n_batches, timesteps).transpose(1, 0, 2)
    y = series[:, timesteps::timesteps].T  # the value after each window
    return x.reshape(-1, timesteps, 1), y.reshape(-1, 1)


x_series, y_series = sine_batches()


def train(model, epochs):
    losses = []
    for _ in range(epochs):
        history = model.fit(x_series, y_series, batch_size=batch_size, shuffle=False, verbose=0)
        losses.append(history.history["loss"][0])
        model.layers[0].reset_states()
    return losses


if "--resume" in sys.argv:
    path = sys.argv[-1]
    model = keras.models.load_model(path)
    np.testing.assert_allclose(
        model.predict(x_series[:batch_size], batch_size=batch_size, verbose=0),
        np.load(path + ".npy"),
        rtol=1e-5,
        atol=1e-6,
    )
    model.layers[0].reset_states()
    before = model.evaluate(x_series, y_series, batch_size=batch_size, verbose=0)
    model.layers[0].reset_states()
    losses = train(model, epochs=3)
    print("resumed", before, losses)
    assert losses[-1] < before
    sys.exit(0)

# Cross-batch statefulness, as the guide writes it.
paragraph1 = rng.random((batch_size, timesteps, features)).astype(np.float32)
paragraph2 = rng.random((batch_size, timesteps, features)).astype(np.float32)
paragraph3 = rng.random((batch_size, timesteps, features)).astype(np.float32)

lstm_layer = layers.LSTM(8, stateful=True)
output = lstm_layer(paragraph1)
first = ops.convert_to_numpy(output)
output = lstm_layer(paragraph2)
output = lstm_layer(paragraph3)
assert tuple(output.shape) == (batch_size, 8)

# Calling it on the three paragraphs in turn reads them as one long sequence.
whole = layers.LSTM(8)
whole(paragraph1)  # builds it
whole.set_weights(lstm_layer.get_weights())
joined = np.concatenate([paragraph1, paragraph2, paragraph3], axis=1)
np.testing.assert_allclose(
    ops.convert_to_numpy(output), whole(joined).numpy(), rtol=1e-5, atol=1e-6
)

# reset_states() will reset the cached state to the original initial_state.
lstm_layer.reset_states()
np.testing.assert_allclose(lstm_layer(paragraph1).numpy(), first, rtol=1e-6)

# RNN state reuse: the states of one layer start another.
lstm_layer(paragraph2)
existing_state = lstm_layer.states

new_lstm_layer = layers.LSTM(8)
new_lstm_layer(paragraph3)  # builds it
new_lstm_layer.set_weights(lstm_layer.get_weights())
new_output = new_lstm_layer(paragraph3, initial_state=existing_state)
np.testing.assert_allclose(
    new_output.numpy(), lstm_layer(paragraph3).numpy(), rtol=1e-5, atol=1e-6
)  # the stateful layer went on from the same state

# A small stateful model: each batch goes on from the state the batch before left.
model = keras.Sequential(
    [
        keras.Input(shape=(timesteps, 1), batch_size=batch_size),
        layers.LSTM(8, stateful=True),
        layers.Dense(1),
    ]
)
model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.02), loss="mse")
losses = train(model, epochs=6)
print("losses", losses)
assert losses[-1] < losses[0], losses

probe = model.predict(x_series[:batch_size], batch_size=batch_size, verbose=0)
model.layers[0].reset_states()  # saved with zero states, so either reading of states agrees
model.save("stateful_lstm.keras")
np.save("stateful_lstm.keras.npy", probe)
subprocess.run([sys.executable, __file__, "--resume", "stateful_lstm.keras"], check=True)
