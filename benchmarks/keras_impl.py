"""W1-W3 written with sluice as a Keras user would: Sequential, LSTM or GRU, Dense, Adam.

    model = keras.Sequential([keras.Input((T, I)), layers.LSTM(H), layers.Dense(classes)])
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))

(`layers.GRU(H)` for W3: Keras 3's GRU, reset gate after the recurrent matmul.) `rnn_step`
drives the model one batch at a time with `train_on_batch`, as the other rows of `python -m
benchmarks` are driven: each step's loss comes back to the host as a float. `fit_step` runs
`fit` over k copies of the batch (`batch_size` the workload's, `shuffle=False`, `verbose=0`);
its time divided by k is what a step of `fit` costs; `python -m benchmarks --keras-fit` adds it
as a row, timed alternately with the others. In two runs on the 2-core machine under heavy load
(2026-11-28, load average 14-22), a step of `fit` over a step of `train_on_batch` (medians):
W1 1.62 and 0.94, W2 0.89, W3 0.90 and 0.95. Four of five within 11% (fit the cheaper), one
outlier: the same cost within this machine's noise, which a quiet run should confirm.
"""

from __future__ import annotations

import numpy as np

import sluice as keras
from benchmarks.workloads import RnnWorkload


def rnn_model(w: RnnWorkload):
    """The compiled Keras model of W1-W3."""
    keras.utils.set_random_seed(0)
    rnn = keras.layers.LSTM if w.cell == "lstm" else keras.layers.GRU
    model = keras.Sequential(
        [keras.Input((w.time, w.inputs)), rnn(w.hidden), keras.layers.Dense(w.classes)]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return model


def rnn_step(w: RnnWorkload):
    """run(x, y) -> loss: one `train_on_batch`."""
    model = rnn_model(w)

    def run(x, y):
        return model.train_on_batch(x, y)

    return run


def fit_step(w: RnnWorkload, k: int):
    """run(x, y) -> the last loss of one `fit` over k copies of the batch: k training steps."""
    model = rnn_model(w)

    def run(x, y):
        xs, ys = np.concatenate([x] * k), np.concatenate([y] * k)
        history = model.fit(xs, ys, batch_size=len(x), epochs=1, shuffle=False, verbose=0)
        return history.history["loss"][-1]

    return run
