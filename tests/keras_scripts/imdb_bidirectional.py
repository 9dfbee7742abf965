"""Bidirectional LSTM on IMDB, after Keras's example: the data comes from
`keras.datasets.imdb.load_data` (the Keras cache; the test writes a tiny imdb.npz there),
padded with `keras.utils.pad_sequences`."""

import numpy as np

import sluice as keras
from sluice import layers

max_features = 40  # only the most frequent words
maxlen = 12  # the first words of each review

(x_train, y_train), (x_val, y_val) = keras.datasets.imdb.load_data(num_words=max_features)
print(len(x_train), "Training sequences", len(x_val), "Validation sequences")
x_train = keras.utils.pad_sequences(x_train, maxlen=maxlen)
x_val = keras.utils.pad_sequences(x_val, maxlen=maxlen)

inputs = keras.Input(shape=(None,), dtype="int32")
x = layers.Embedding(max_features, 8, mask_zero=True)(inputs)
x = layers.Bidirectional(layers.LSTM(8, return_sequences=True))(x)
x = layers.Bidirectional(layers.GRU(8), merge_mode="sum")(x)
outputs = layers.Dense(1, activation="sigmoid")(x)
model = keras.Model(inputs, outputs)
model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
history = model.fit(x_train, y_train, batch_size=16, epochs=2, validation_data=(x_val, y_val))
assert set(history.history) >= {"loss", "accuracy", "val_loss", "val_accuracy"}
assert np.all(np.isfinite(history.history["loss"]))
