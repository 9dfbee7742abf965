"""A Keras example's training step: sluice's `fit` against Keras 3 on the JAX backend.

The model is keras-io's timeseries-classification transformer
(examples/timeseries/timeseries_classification_transformer.py) with the example's settings: 4
encoder blocks of MultiHeadAttention(key_dim=256, num_heads=4, dropout=0.25), LayerNormalization
and a residual, then a Conv1D(4, relu) / Conv1D(1) feed-forward, LayerNormalization and a
residual; GlobalAveragePooling1D(data_format="channels_first"), Dense(128, relu), Dropout(0.4),
Dense(2, softmax); Adam(1e-4), sparse categorical cross-entropy and accuracy; batch 64 of
univariate sequences. The example's sequences have 500 steps; a 2-core CPU takes seconds per
step at 64 (`--seq`, default 64). `--no-dropout` sets every dropout rate to 0, which leaves out
the random numbers the dropouts draw (the attention dropout draws batch x heads x seq x seq).

A step is one `fit` over `--steps` batches (one epoch, no shuffling, verbose=0) divided by the
number of batches, after a warm-up `fit` that compiles; the losses come back in the History as
Python floats, so each timed fit ends with its last step's loss on the host, in both frameworks.
The same code builds the model in both (`build_model(keras, ...)`), one process per framework.

    python -m benchmarks.transformer_encoder                 # sluice alone
    python -m benchmarks.transformer_encoder --peer-python /tmp/kerasvenv/bin/python
    /tmp/kerasvenv/bin/python benchmarks/transformer_encoder.py --framework keras3

With `--peer-python`, the two frameworks run alternately (`--rounds` processes each, the first
of each round swapped every round, so load on a shared machine falls on both) and the report
gives each framework's median over all timed fits, the spread of the per-round medians, and the
ratio sluice / Keras 3. The peer interpreter needs Keras 3 and JAX, kept out of the project:
`python3 -m venv /tmp/kerasvenv && /tmp/kerasvenv/bin/pip install keras jax==<sluice's jax>`
(the same JAX, so both run the same XLA). KERAS_BACKEND=jax is set for it here.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from types import ModuleType

import numpy as np

FRAMEWORKS = ("sluice", "keras3")
RESULT = "RESULT "  # the line a worker process prints its timings on


def build_model(keras: ModuleType, input_shape: tuple, n_classes: int = 2, dropout: bool = True):
    """The example's model and compile, written against `keras` (sluice or Keras 3); without
    `dropout`, every dropout rate is 0 (no random numbers drawn)."""
    layers = keras.layers

    def transformer_encoder(inputs, head_size, num_heads, ff_dim, dropout=0):
        x = layers.MultiHeadAttention(key_dim=head_size, num_heads=num_heads, dropout=dropout)(
            inputs, inputs
        )
        x = layers.Dropout(dropout)(x)
        x = layers.LayerNormalization(epsilon=1e-6)(x)
        res = x + inputs
        x = layers.Conv1D(filters=ff_dim, kernel_size=1, activation="relu")(res)
        x = layers.Dropout(dropout)(x)
        x = layers.Conv1D(filters=inputs.shape[-1], kernel_size=1)(x)
        x = layers.LayerNormalization(epsilon=1e-6)(x)
        return x + res

    inputs = keras.Input(shape=input_shape)
    x = inputs
    for _ in range(4):
        x = transformer_encoder(x, head_size=256, num_heads=4, ff_dim=4, dropout=0.25 * dropout)
    x = layers.GlobalAveragePooling1D(data_format="channels_first")(x)
    for dim in [128]:
        x = layers.Dense(dim, activation="relu")(x)
        x = layers.Dropout(0.4 * dropout)(x)
    outputs = layers.Dense(n_classes, activation="softmax")(x)
    model = keras.Model(inputs, outputs)
    model.compile(
        loss="sparse_categorical_crossentropy",
        optimizer=keras.optimizers.Adam(learning_rate=1e-4),
        metrics=["sparse_categorical_accuracy"],
    )
    return model


def _import_keras(framework: str) -> ModuleType:
    if framework == "sluice":
        import sluice

        return sluice
    os.environ.setdefault("KERAS_BACKEND", "jax")
    import keras

    if keras.backend.backend() != "jax":
        raise SystemExit(f"Keras 3 runs on {keras.backend.backend()!r} here; set KERAS_BACKEND=jax")
    return keras


def time_fit(
    framework: str, seq: int, batch: int, steps: int, repeats: int, dropout: bool = True
) -> dict:
    """Milliseconds per step of `repeats` timed fits of `steps` batches each."""
    keras = _import_keras(framework)
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(batch * steps, seq, 1)).astype("float32")
    y = rng.integers(0, 2, size=batch * steps)
    model = build_model(keras, (seq, 1), dropout=dropout)
    start = time.perf_counter()
    model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)
    compile_s = time.perf_counter() - start
    step_ms, losses = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        history = model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)
        step_ms.append((time.perf_counter() - start) * 1e3 / steps)
        losses.append(float(history.history["loss"][-1]))
    import jax

    return {
        "framework": framework,
        "version": getattr(keras, "__version__", "?"),
        "jax": jax.__version__,
        "seq": seq,
        "batch": batch,
        "steps": steps,
        "dropout": dropout,
        "first_fit_s": round(compile_s, 2),
        "step_ms": [round(t, 2) for t in step_ms],
        "median_ms": round(statistics.median(step_ms), 2),
        "losses": [round(v, 4) for v in losses],
    }


def _worker(framework: str, python: str, args: argparse.Namespace) -> dict:
    """One framework timed in its own process, whose last RESULT line is parsed."""
    flags = ["--framework", framework, "--seq", str(args.seq), "--batch", str(args.batch)]
    flags += ["--steps", str(args.steps), "--repeats", str(args.repeats)]
    flags += ["--no-dropout"] if args.no_dropout else []
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if framework == "sluice":  # from the repository root, so `import sluice` finds this tree
        command = [python, "-m", "benchmarks.transformer_encoder", *flags]
    else:  # a file run by the peer interpreter, which has no sluice
        command = [python, os.path.join(here, "benchmarks", "transformer_encoder.py"), *flags]
    env = dict(os.environ, KERAS_BACKEND="jax")
    out = subprocess.run(command, cwd=here, env=env, capture_output=True, text=True, check=False)
    lines = [line for line in out.stdout.splitlines() if line.startswith(RESULT)]
    if out.returncode or not lines:
        raise SystemExit(f"{framework} worker failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return json.loads(lines[-1][len(RESULT) :])


def alternate(args: argparse.Namespace) -> dict:
    """Both frameworks, `args.rounds` processes each, alternating; the summary per framework."""
    runs: dict[str, list[dict]] = {name: [] for name in FRAMEWORKS}
    pythons = {"sluice": sys.executable, "keras3": args.peer_python}
    for i in range(args.rounds):
        order = FRAMEWORKS if i % 2 == 0 else FRAMEWORKS[::-1]
        for name in order:
            result = _worker(name, pythons[name], args)
            runs[name].append(result)
            print(json.dumps(result), flush=True)
    summary = {}
    for name, results in runs.items():
        every = [t for r in results for t in r["step_ms"]]
        per_round = [r["median_ms"] for r in results]
        summary[name] = {
            "median_ms": round(statistics.median(every), 1),
            "round_medians_ms": per_round,
            "min_ms": round(min(every), 1),
            "first_fit_s": [r["first_fit_s"] for r in results],
        }
    summary["ratio_sluice_over_keras3"] = round(
        summary["sluice"]["median_ms"] / summary["keras3"]["median_ms"], 3
    )
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", choices=FRAMEWORKS, default="sluice")
    parser.add_argument("--seq", type=int, default=64, help="sequence length (the example: 500)")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=8, help="batches per timed fit")
    parser.add_argument("--repeats", type=int, default=5, help="timed fits per process")
    parser.add_argument("--no-dropout", action="store_true", help="every dropout rate 0")
    parser.add_argument("--peer-python", help="an interpreter with Keras 3 and JAX: alternate")
    parser.add_argument("--rounds", type=int, default=3, help="processes per framework")
    args = parser.parse_args()
    if args.peer_python:
        print(json.dumps(alternate(args), indent=2))
    else:
        result = time_fit(
            args.framework, args.seq, args.batch, args.steps, args.repeats, not args.no_dropout
        )
        print(RESULT + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
