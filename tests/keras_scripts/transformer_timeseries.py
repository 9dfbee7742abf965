"""A transformer-encoder classifier, after Keras's "Timeseries classification with a
Transformer model": MultiHeadAttention, LayerNormalization, residual additions, Conv1D
feed-forward blocks and channels_first global pooling, at a tiny size (sequence 24, not 500);
saved, loaded in a new process and trained on."""

import subprocess
import sys

import numpy as np

import sluice as keras
from sluice import layers


def readucr(rng, n=48, length=24):
    """Two classes of noisy series: a sine, or a sine with a step in its second half."""
    t = np.linspace(0, 4 * np.pi, length)
    y = rng.integers(0, 2, size=n)
    x = np.sin(t)[None, :] + 0.3 * rng.normal(size=(n, length))
    x[y == 1, length // 2 :] += 1.5
    return x.astype("float32"), y


rng = np.random.default_rng(0)
x_train, y_train = readucr(rng)
x_train = x_train.reshape((x_train.shape[0], x_train.shape[1], 1))
n_classes = len(np.unique(y_train))

if "--resume" in sys.argv:
    model = keras.models.load_model(sys.argv[-1])
    before = model.evaluate(x_train, y_train, verbose=0)[0]
    history = model.fit(x_train, y_train, epochs=2, batch_size=16, verbose=0)
    print("resumed", before, history.history["loss"])
    after = model.evaluate(x_train, y_train, verbose=0)[0]
    print("evaluated", before, "->", after)
    assert after < before  # the loaded model trains on (evaluated alike: no dropout)
    sys.exit(0)


def transformer_encoder(inputs, head_size, num_heads, ff_dim, dropout=0):
    # Attention and Normalization
    x = layers.MultiHeadAttention(key_dim=head_size, num_heads=num_heads, dropout=dropout)(
        inputs, inputs
    )
    x = layers.Dropout(dropout)(x)
    x = layers.LayerNormalization(epsilon=1e-6)(x)
    res = x + inputs

    # Feed Forward Part
    x = layers.Conv1D(filters=ff_dim, kernel_size=1, activation="relu")(res)
    x = layers.Dropout(dropout)(x)
    x = layers.Conv1D(filters=inputs.shape[-1], kernel_size=1)(x)
    x = layers.LayerNormalization(epsilon=1e-6)(x)
    return x + res


def build_model(
    input_shape, head_size, num_heads, ff_dim, num_transformer_blocks, mlp_units, dropout=0,
    mlp_dropout=0,
):  # fmt: skip
    inputs = keras.Input(shape=input_shape)
    x = inputs
    for _ in range(num_transformer_blocks):
        x = transformer_encoder(x, head_size, num_heads, ff_dim, dropout)

    x = layers.GlobalAveragePooling1D(data_format="channels_first")(x)
    for dim in mlp_units:
        x = layers.Dense(dim, activation="relu")(x)
        x = layers.Dropout(mlp_dropout)(x)
    outputs = layers.Dense(n_classes, activation="softmax")(x)
    return keras.Model(inputs, outputs)


model = build_model(
    x_train.shape[1:], head_size=8, num_heads=2, ff_dim=4, num_transformer_blocks=1,
    mlp_units=[16], mlp_dropout=0.1, dropout=0.1,
)  # fmt: skip
model.compile(
    loss="sparse_categorical_crossentropy",
    optimizer=keras.optimizers.Adam(learning_rate=3e-3),
    metrics=["sparse_categorical_accuracy"],
)
callbacks = [keras.callbacks.EarlyStopping(patience=10, restore_best_weights=True)]
history = model.fit(
    x_train, y_train, validation_split=0.25, epochs=6, batch_size=16, callbacks=callbacks,
    verbose=0,
)  # fmt: skip
losses = history.history["loss"]
print("losses", losses)
assert losses[-1] < losses[0]
assert model.output_shape == (None, n_classes)

model.save("transformer.keras")
subprocess.run([sys.executable, __file__, "--resume", "transformer.keras"], check=True)
