"""Keras layers train the same under DataParallel and ModelParallel (4 virtual devices) as on one
device: BatchNormalization, a masked Embedding into a GRU, a Bidirectional LSTM, convolutions and
pooling, with kernels, embeddings and recurrent weights split over a "model" axis (inside the
RNNs' while loops too). Losses, predictions and evaluate at rtol 1e-5. Slow: three fits per
model, each compiling its steps."""

import contextlib

import numpy as np
import pytest

import sluice as sl
from sluice import layers as L

RNG = np.random.default_rng(0)
MODELS = {
    "batch_norm": (
        lambda: [sl.Input((6,)), L.Dense(8), L.BatchNormalization(), L.Dense(4)],
        RNG.normal(size=(32, 6)).astype("float32"),
    ),
    "embedding_gru": (
        lambda: [
            sl.Input((5,), dtype="int32"),
            L.Embedding(11, 4, mask_zero=True),
            L.GRU(6),
            L.Dense(4),
        ],
        RNG.integers(0, 11, size=(32, 5)),
    ),
    "bidirectional_lstm": (
        lambda: [
            sl.Input((5, 3)),
            L.Bidirectional(L.LSTM(4, return_sequences=True)),
            L.LSTM(4),
            L.Dense(4),
        ],
        RNG.normal(size=(32, 5, 3)).astype("float32"),
    ),
    "conv": (
        lambda: [
            sl.Input((8, 8, 2)),
            L.Conv2D(4, 3, padding="same"),
            L.AveragePooling2D(),
            L.GlobalMaxPooling2D(),
            L.Dense(4),
        ],
        RNG.normal(size=(32, 8, 8, 2)).astype("float32"),
    ),
}
LABELS = RNG.integers(0, 4, size=32).astype("int32")


def _model_parallel():
    mesh = sl.distribution.DeviceMesh((2, 2), ("batch", "model"))
    layout_map = sl.distribution.LayoutMap(mesh)
    layout_map[r"lstm.*kernel|gru.*kernel|dense_?\d?/kernel$"] = (None, "model")
    layout_map["conv2d/kernel"] = (None, None, None, "model")
    layout_map["embedding"] = (None, "model")
    return sl.distribution.ModelParallel(layout_map=layout_map)


def _train(name, distribution):
    body, x = MODELS[name]
    with sl.Graph().as_default():
        sl.utils.set_random_seed(3)
        with distribution.scope() if distribution else contextlib.nullcontext():
            model = sl.Sequential(body())
            model.compile(
                "sgd",
                sl.losses.SparseCategoricalCrossentropy(from_logits=True),
                metrics=["accuracy"],
            )
            history = model.fit(x, LABELS, batch_size=8, epochs=2, verbose=0)
            return (
                history.history["loss"],
                model.predict(x, verbose=0),
                model.evaluate(x, LABELS, verbose=0),
            )


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MODELS))
def test_layers_train_the_same_on_a_mesh(name):
    want = _train(name, None)
    for distribution in (sl.distribution.DataParallel(), _model_parallel()):
        for got, expected in zip(_train(name, distribution), want):
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
