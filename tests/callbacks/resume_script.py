"""A training script for the BackupAndRestore test, run in a subprocess:

    python resume_script.py WORK_DIR KIND [KILL_AT_STEP]

It fits a small model with shuffling, BackupAndRestore every 2 steps and a CSVLogger, writing
each step's logs to WORK_DIR/steps.jsonl; KIND "dense" is Dense -> BatchNormalization ->
Dropout -> Dense, KIND "lstm" is Embedding(mask_zero) -> LSTM(dropout, recurrent_dropout) ->
Dropout -> Dense; KIND "custom" is the dense model trained by its own `train_step` (a
GradientTape, as the Keras guide writes one); a KIND ending in "-dp" trains it under
DataParallel on 4 virtual CPU devices.
With KILL_AT_STEP it SIGKILLs itself right after that global step.
"""

import json
import os
import signal
import sys

if sys.argv[2].endswith("-dp"):  # before JAX starts
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import numpy as np

import sluice as sl
from sluice import layers as L
from sluice.testing.keras_guide import GuideTrainStep


class StepLog(sl.callbacks.Callback):
    def __init__(self, path, kill_at):
        super().__init__()
        self.path, self.kill_at = path, kill_at
        self.epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        with open(self.path, "a") as fh:
            fh.write(json.dumps({"epoch": self.epoch, "batch": batch, **logs}) + "\n")
        step = self.epoch * self.params["steps"] + batch + 1
        if step == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)


class CustomStep(GuideTrainStep, sl.Sequential):
    """The dense model trained by the Keras guide's own `train_step`."""


def _data_and_model(kind):
    rng = np.random.default_rng(0)
    if kind in ("dense", "custom"):
        x = rng.normal(size=(40, 6)).astype(np.float32)
        y = (x[:, 0] + x[:, 1] > 0).astype(np.int32)
        body = [
            sl.Input((6,)),
            L.Dense(8, activation="relu"),
            L.BatchNormalization(),
            L.Dropout(0.3),
        ]
    else:
        x = rng.integers(1, 9, size=(40, 6))
        x[::3, 4:] = 0  # padding, masked
        y = (x[:, 0] + x[:, 1] > 9).astype(np.int32)
        body = [
            sl.Input((6,), dtype="int32"),
            L.Embedding(9, 4, mask_zero=True),
            L.LSTM(5, dropout=0.2, recurrent_dropout=0.1),
            L.Dropout(0.3),
        ]
    model_class = CustomStep if kind == "custom" else sl.Sequential
    return x, y, model_class(body + [L.Dense(2, activation="softmax")])


def main(work_dir, kind, kill_at):
    sl.utils.set_random_seed(11)
    if kind.endswith("-dp"):
        kind = kind[: -len("-dp")]
        sl.distribution.set_distribution(sl.distribution.DataParallel())
    x, y, model = _data_and_model(kind)
    model.compile(sl.optimizers.Adam(0.02), "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(
        x, y, batch_size=8, epochs=3, verbose=0, shuffle=True,
        callbacks=[
            sl.callbacks.BackupAndRestore(os.path.join(work_dir, "backup"), save_freq=2),
            sl.callbacks.CSVLogger(os.path.join(work_dir, "log.csv")),
            StepLog(os.path.join(work_dir, "steps.jsonl"), kill_at),
        ],
    )  # fmt: skip
    np.save(
        os.path.join(work_dir, "weights.npy"),
        np.concatenate([w.ravel() for w in model.get_weights()]),
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else -1)
