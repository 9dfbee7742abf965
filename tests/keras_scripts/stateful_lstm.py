"""A stateful LSTM, after Keras's stateful_lstm example: the batch size is fixed, each batch
continues the sequences of the batch before it, and the states are reset between epochs."""

import numpy as np

import sluice as keras

batch_size, tsteps, lahead = 4, 1, 1
t = np.arange(64, dtype="float32")
signal = np.sin(t / 4.0)[:, None, None]  # [samples, tsteps, 1]
expected_output = np.roll(signal[:, 0, :], -lahead, axis=0)

model = keras.Sequential(
    [
        keras.Input(shape=(tsteps, 1), batch_size=batch_size),
        keras.layers.LSTM(8, return_sequences=False, stateful=True),
        keras.layers.Dense(1),
    ]
)
model.compile(loss="mse", optimizer="adam")
lstm = model.layers[0]
losses = []
for epoch in range(3):
    history = model.fit(
        signal, expected_output, batch_size=batch_size, epochs=1, verbose=0, shuffle=False
    )
    losses.append(history.history["loss"][0])
    model.reset_states()  # Keras 2's spelling; Keras 3 resets the layer: lstm.reset_states()
print("losses", losses)

# The state carries over from one predict to the next, and reset_states starts again.
first = model.predict(signal[:batch_size], batch_size=batch_size, verbose=0)
second = model.predict(signal[:batch_size], batch_size=batch_size, verbose=0)
assert not np.allclose(first, second)
lstm.reset_states()
again = model.predict(signal[:batch_size], batch_size=batch_size, verbose=0)
np.testing.assert_allclose(again, first, rtol=1e-6)
assert any(np.any(keras.ops.convert_to_numpy(s) != 0) for s in lstm.states)
lstm.reset_states()
assert all(np.all(keras.ops.convert_to_numpy(s) == 0) for s in lstm.states)
