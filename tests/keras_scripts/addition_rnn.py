"""Learning to add numbers given as strings, after Keras's addition_rnn example: an LSTM
encoder, RepeatVector, an LSTM decoder with return_sequences, a Dense softmax per step, and
`to_categorical`-style one-hot data."""

import numpy as np

import sluice as keras
from sluice import layers

DIGITS = 2
MAXLEN = DIGITS + 1 + DIGITS
chars = "0123456789+ "
char_index = {c: i for i, c in enumerate(chars)}
rng = np.random.default_rng(4)


def encode(text, rows):
    return keras.utils.to_categorical([char_index[c] for c in text], len(chars))[:rows]


questions, answers = [], []
for _ in range(128):
    a, b = (int(rng.integers(0, 10**DIGITS)) for _ in range(2))
    questions.append(f"{a}+{b}".ljust(MAXLEN))
    answers.append(str(a + b).ljust(DIGITS + 1))
x = np.stack([encode(q, MAXLEN) for q in questions])
y = np.stack([encode(a, DIGITS + 1) for a in answers])

model = keras.Sequential()
model.add(keras.Input(shape=(MAXLEN, len(chars))))
model.add(layers.LSTM(16))
model.add(layers.RepeatVector(DIGITS + 1))
model.add(layers.LSTM(16, return_sequences=True))
model.add(layers.Dense(len(chars), activation="softmax"))
model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
history = model.fit(x, y, batch_size=32, epochs=2, validation_split=0.25, verbose=0)
assert history.history["loss"][-1] < history.history["loss"][0]
preds = np.argmax(model.predict(x[:3], verbose=0), axis=-1)
print([("".join(chars[i] for i in p), a) for p, a in zip(preds, answers[:3])])
