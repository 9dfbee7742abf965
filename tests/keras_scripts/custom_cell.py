"""A recurrent cell of one's own, after Keras's "Working with RNNs" guide: the cell is a Layer
with `call(inputs, states)` and `state_size`, run by `layers.RNN` (one cell, or a stack of
them), behind a Masking layer, trained, saved as .keras with the cell registered, and loaded."""

import numpy as np

import sluice as keras


@keras.saving.register_keras_serializable(package="guide")
class MinimalRNNCell(keras.layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = units

    def build(self, input_shape):
        self.kernel = self.add_weight(
            shape=(input_shape[-1], self.units), initializer="uniform", name="kernel"
        )
        self.recurrent_kernel = self.add_weight(
            shape=(self.units, self.units), initializer="uniform", name="recurrent_kernel"
        )
        self.built = True

    def call(self, inputs, states):
        prev_output = states[0]
        h = keras.ops.matmul(inputs, self.kernel)
        output = keras.ops.tanh(h + keras.ops.matmul(prev_output, self.recurrent_kernel))
        return output, [output]

    def get_config(self):
        return {**super().get_config(), "units": self.units}


rng = np.random.default_rng(2)
x = rng.normal(size=(64, 6, 5)).astype("float32")
x[::2, 4:] = 0.0  # padded steps, masked below
y = (x.sum(axis=(1, 2)) > 0).astype("float32")

inputs = keras.Input((None, 5))
masked = keras.layers.Masking(mask_value=0.0)(inputs)
sequences = keras.layers.RNN(MinimalRNNCell(8), return_sequences=True)(masked)
last = keras.layers.RNN([MinimalRNNCell(8), MinimalRNNCell(4)])(sequences)
outputs = keras.layers.Dense(1, activation="sigmoid")(last)
model = keras.Model(inputs, outputs)
model.compile(optimizer=keras.optimizers.Adam(0.01), loss="binary_crossentropy")
history = model.fit(x, y, batch_size=16, epochs=2, verbose=0)
assert history.history["loss"][-1] < history.history["loss"][0], history.history

# Masked steps change nothing: padding a row further gives the same prediction.
longer = np.concatenate([x[:2], np.zeros((2, 3, 5), "float32")], axis=1)
np.testing.assert_allclose(
    model.predict(longer, verbose=0), model.predict(x[:2], verbose=0), rtol=1e-5, atol=1e-6
)

model.save("custom_cell.keras")
restored = keras.models.load_model("custom_cell.keras")
np.testing.assert_allclose(
    restored.predict(x[:8], verbose=0), model.predict(x[:8], verbose=0), rtol=1e-6
)
