"""A custom `train_step` against the built-in step of `fit`, on the same model and data (issue
27, item 8: within 5%).

    python -m benchmarks.custom_step [--steps 40] [--rounds 10] [--only mlp,lstm]

The custom step is the Keras guide's ("Customizing what happens in fit() with TensorFlow"): a
`GradientTape` over the forward pass and `compute_loss`, `optimizer.apply`, and the metrics of
`self.metrics` updated and returned. Both models start from the same weights. Each round fits
each model for `--steps` batches (after a warm-up fit that compiles its step), alternating, so
that a busy machine slows both alike, and the time of a batch is taken between
`on_train_batch_begin` and `on_train_batch_end`: fit's own per-batch work (slicing the batch,
the session run, the logs on the host) included. Reported: the median and the minimum
wall-clock ms per batch over all rounds, the median CPU ms (all threads of the process: less
sensitive to other processes on the machine), and custom / built-in for each.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import sluice as sl
from sluice import layers as L
from sluice.testing.keras_guide import GuideTrainStep


class GuideStep(GuideTrainStep, sl.Model):
    """`train_step` as the guide writes it (functional: built from Input, like the built-in)."""


def mlp(cls: type) -> tuple:
    """A small MLP classifier: 64 features, 2 hidden layers of 256, 10 classes, batch 64."""
    inputs = sl.Input((64,))
    h = L.Dense(256, activation="relu")(inputs)
    h = L.Dense(256, activation="relu")(h)
    model = cls(inputs, L.Dense(10, activation="softmax")(h))
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64 * 8, 64)).astype(np.float32)
    return model, x, rng.integers(0, 10, len(x)).astype(np.int32), 64


def lstm(cls: type) -> tuple:
    """An LSTM classifier (W1's shapes, smaller): batch 32, 20 steps of 16, 64 units."""
    inputs = sl.Input((20, 16))
    model = cls(inputs, L.Dense(10, activation="softmax")(L.LSTM(64)(inputs)))
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32 * 8, 20, 16)).astype(np.float32)
    return model, x, rng.integers(0, 10, len(x)).astype(np.int32), 32


class _BatchTimes(sl.callbacks.Callback):
    """Wall-clock and CPU (all threads of the process) ms of each batch."""

    def __init__(self) -> None:
        super().__init__()
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self._start = (0.0, 0.0)

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        self._start = (time.perf_counter(), time.process_time())

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self.wall.append((time.perf_counter() - self._start[0]) * 1e3)
        self.cpu.append((time.process_time() - self._start[1]) * 1e3)


def compare(make, steps: int, rounds: int) -> dict:
    builtin, x, y, batch = make(sl.Model)
    custom, _, _, _ = make(GuideStep)
    custom.set_weights(builtin.get_weights())
    models = {"built-in fit step": builtin, "custom train_step": custom}
    for model in models.values():
        model.compile(
            sl.optimizers.Adam(1e-3), "sparse_categorical_crossentropy", metrics=["accuracy"]
        )
        model.fit(x, y, batch_size=batch, epochs=1, verbose=0)  # compiles the step
    epochs = -(-steps * batch // len(x))
    timers = {name: _BatchTimes() for name in models}
    for _ in range(rounds):
        for name, model in models.items():
            model.fit(x, y, batch_size=batch, epochs=epochs, verbose=0, callbacks=[timers[name]])
    rows = {
        name: (statistics.median(t.wall), min(t.wall), statistics.median(t.cpu))
        for name, t in timers.items()
    }
    custom, builtin = rows["custom train_step"], rows["built-in fit step"]
    rows["custom / built-in"] = tuple(c / b for c, b in zip(custom, builtin))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--only", default="mlp,lstm")
    args = parser.parse_args()
    for name in args.only.split(","):
        rows = compare({"mlp": mlp, "lstm": lstm}[name], args.steps, args.rounds)
        print(f"\n{name}: ms per batch, {args.rounds} rounds of ~{args.steps} batches")
        print(f"  {'':20s} {'median':>8s} {'min':>8s} {'cpu med':>8s}")
        for label, (median, low, cpu) in rows.items():
            print(f"  {label:20s} {median:8.3f} {low:8.3f} {cpu:8.3f}")


if __name__ == "__main__":
    main()
