"""One process of the multi-process tests (tests/distribution/test_multiprocess.py).

    python tests/distribution/mp_worker.py lstm_dp|cnn_mp|w1_dp OUTDIR

joins the job (`sl.distribution.initialize()`, from the SLUICE_* variables `run_processes`
sets), trains under a distribution spanning every process's devices, and writes the loss after
each step to OUTDIR/losses_<mode>_<process id>.json:
  lstm_dp  LSTM with `fit` under DataParallel, then `model.save_weights(OUTDIR/model.weights.h5)`
           (a collective call: process 0 writes) and, from process 0, OUTDIR/final_weights.npz;
  cnn_mp   a CNN with `fit` under ModelParallel, its dense kernels split over a "model" axis;
  w1_dp    W1 in TF1 style in a `sl.Session` under DataParallel, saved by `sl.train.Saver` into
           OUTDIR/w1/ (collective), and from process 0 the final values, OUTDIR/final_values.npz.

Importing this module does nothing: the test imports `train` and `train_w1` to run the same
training in one process, on 4 devices or on one.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import sys

import numpy as np

if __name__ == "__main__":  # run as a script: the repository root, for `import sluice`
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

import sluice as sl  # noqa: E402
from sluice import layers as L  # noqa: E402

SAMPLES, BATCH_SIZE, EPOCHS, CLASSES = 64, 16, 2, 10
MODES = ("lstm_dp", "cnn_mp", "w1_dp")


def data(mode: str) -> tuple[np.ndarray, np.ndarray]:
    """The same inputs and labels in every process: (64, 6, 4) sequences or (64, 8, 8, 1)
    images, labels in [0, 10)."""
    rng = np.random.default_rng(1)
    shape = (8, 8, 1) if mode == "cnn_mp" else (6, 4)
    x = rng.normal(size=(SAMPLES, *shape)).astype(np.float32)
    y = rng.integers(0, CLASSES, size=SAMPLES).astype(np.int32)
    return x, y


def build_model(mode: str) -> sl.Model:
    """The model of `mode`, with the same initial weights wherever it is built."""
    sl.utils.set_random_seed(0)
    if mode == "lstm_dp":
        layers = [sl.Input((6, 4)), L.LSTM(16), L.Dense(CLASSES)]
    else:
        layers = [
            sl.Input((8, 8, 1)),
            L.Conv2D(4, 3, activation="relu"),
            L.MaxPooling2D(),
            L.Flatten(),
            L.Dense(16, activation="relu"),
            L.Dense(CLASSES),
        ]
    return sl.Sequential(layers)


def distribution(mode: str) -> sl.distribution.Distribution:
    """Over every device of every process (4 in the tests): "cnn_mp" splits the batch 2 ways
    and the dense kernels' output columns over a "model" axis; the others split the batch 4
    ways."""
    if mode != "cnn_mp":
        return sl.distribution.DataParallel()
    mesh = sl.distribution.DeviceMesh((2, 2), ("batch", "model"))
    layout_map = sl.distribution.LayoutMap(mesh)
    layout_map["dense.*kernel"] = (None, "model")
    return sl.distribution.ModelParallel(layout_map=layout_map)


def train(
    mode: str,
    distribute: bool,
    verbose: int = 0,
    start: pathlib.Path | None = None,
    csv_log: pathlib.Path | None = None,
) -> tuple[sl.Model, list[float]]:
    """Trains the model of `mode` (under `distribution(mode)` when `distribute`), from the
    weights file `start` when it exists; returns the model and the loss `fit` reported after
    each step (Keras's running mean over the epoch)."""
    model = build_model(mode)
    losses: list[float] = []
    record = sl.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: losses.append(float(logs["loss"]))
    )
    scope = distribution(mode).scope() if distribute else contextlib.nullcontext()
    with scope:
        model.compile(
            sl.optimizers.Adam(1e-2), sl.losses.SparseCategoricalCrossentropy(from_logits=True)
        )
        if start is not None and start.exists():
            model.load_weights(str(start))  # every process reads it and lays out its part
        x, y = data(mode)
        model.fit(
            x,
            y,
            batch_size=BATCH_SIZE,
            epochs=EPOCHS,
            shuffle=False,
            verbose=verbose,
            callbacks=[record] + ([sl.callbacks.CSVLogger(str(csv_log))] if csv_log else []),
        )
    return model, losses


def w1_graph() -> tuple:
    """W1 of shared/WORKLOADS.md, small, in TF1 style: dynamic_rnn over BasicLSTMCell(16),
    Dense(10) on the last output, softmax cross-entropy, Adam, built in the default graph.
    Returns (x, y, loss, train_op)."""
    sl.set_random_seed(0)
    x = sl.placeholder(sl.float32, [None, 6, 4], name="x")
    y = sl.placeholder(sl.int32, [None], name="y")
    _, state = sl.cells.dynamic_rnn(sl.cells.BasicLSTMCell(16), x, dtype=sl.float32)
    w = sl.get_variable("dense/kernel", [16, CLASSES])
    b = sl.get_variable("dense/bias", [CLASSES], initializer=sl.zeros_initializer())
    loss = sl.reduce_mean(
        sl.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=sl.matmul(state.h, w) + b)
    )
    return x, y, loss, sl.train.AdamOptimizer(1e-2).minimize(loss)


def train_w1(distribute: bool, save_path: str | None = None) -> tuple[list[float], dict]:
    """One epoch of `w1_graph` in a `sl.Session` (under `distribution("w1_dp")` when
    `distribute`); saves a checkpoint with `sl.train.Saver` to `save_path` if given. Returns
    the loss of each step and every variable's final value, by name."""
    with sl.Graph().as_default():
        x, y, loss, train_op = w1_graph()
        saver = sl.train.Saver()
        config = sl.SessionConfig(distribution=distribution("w1_dp") if distribute else None)
        with sl.Session(config=config) as sess:
            sess.run(sl.global_variables_initializer())
            inputs, labels = data("w1_dp")
            losses = [
                float(
                    sess.run(
                        (loss, train_op),
                        {x: inputs[i : i + BATCH_SIZE], y: labels[i : i + BATCH_SIZE]},
                    )[0]
                )
                for i in range(0, SAMPLES, BATCH_SIZE)
            ]
            if save_path is not None:
                saver.save(sess, save_path)  # collective: every process calls it, process 0 writes
            return losses, variable_values(sess)


def restore_w1(save_path: str) -> dict:
    """Every variable of `w1_graph` as restored from `save_path` in a one-device session."""
    with sl.Graph().as_default():
        w1_graph()
        with sl.Session() as sess:
            sl.train.Saver().restore(sess, save_path)
            return variable_values(sess)


def variable_values(sess: sl.Session) -> dict:
    variables = sl.global_variables()
    return {v.op.name: value for v, value in zip(variables, sess.run(variables))}


def main(mode: str, outdir: pathlib.Path) -> None:
    sl.distribution.initialize()
    index = sl.distribution.process_index()
    if mode == "w1_dp":
        (outdir / "w1").mkdir(exist_ok=True)
        losses, values = train_w1(distribute=True, save_path=str(outdir / "w1" / "model"))
        if index == 0:
            np.savez(outdir / "final_values.npz", **values)
    else:
        model, losses = train(
            mode,
            distribute=True,
            verbose=1,
            start=outdir / "start.weights.h5",
            csv_log=outdir / "log.csv",
        )
        if mode == "lstm_dp":
            weights = model.get_weights()  # gathers sharded values: every process calls it
            model.save_weights(str(outdir / "model.weights.h5"))  # collective: process 0 writes
            if index == 0:
                np.savez(outdir / "final_weights.npz", *weights)
    (outdir / f"losses_{mode}_{index}.json").write_text(json.dumps(losses))
    print(f"process {index} of {sl.distribution.process_count()} done", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in MODES:
        sys.exit(f"usage: {sys.argv[0]} {'|'.join(MODES)} OUTDIR")
    if not os.environ.get("SLUICE_COORDINATOR"):
        sys.exit("SLUICE_COORDINATOR is not set: run me with tests/distribution/multiprocess.py")
    main(sys.argv[1], pathlib.Path(sys.argv[2]))
