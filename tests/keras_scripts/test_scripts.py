"""Keras-style scripts written the way Keras's own examples are (`import sluice as keras`),
each run whole at a tiny size: seq2seq with saved and reloaded encoder/decoder models, a
Conv1D time-series classifier with ModelCheckpoint(".keras") and load_model, a stateful LSTM,
a custom cell in RNN, a functional model with residual arithmetic, and models fed from
`keras.datasets` (tiny files in Keras's format, written into a Keras cache here); and Keras 3's
compositional examples: a GAN and a VAE with their own train_step, knowledge distillation,
siamese towers, a transformer encoder, transfer learning, the RNN guide's stateful calls on
arrays and the JAX guide's training loop, each saved, loaded in a new process and trained on."""

from __future__ import annotations

import os
import pathlib
import runpy

import numpy as np
import pytest

import sluice as sl

# VGG16's compiles (frozen, then fine-tuned, then again in the resuming process): about 35 s
SLOW = {"transfer_learning"}
# Scripts that stop at a named missing feature; strict, so the suite says when they pass.
# {name: (the error it stops at, the feature it lacks)}
XFAIL: dict[str, tuple[type, str]] = {}


def _param(name: str) -> object:
    if name in SLOW:
        return pytest.param(name, marks=pytest.mark.slow)
    if name in XFAIL:
        error, reason = XFAIL[name]
        return pytest.param(name, marks=pytest.mark.xfail(raises=error, reason=reason, strict=True))
    return name


SCRIPTS = [
    _param(name)
    for name in sorted(p.stem for p in pathlib.Path(__file__).parent.glob("*.py")
                       if not p.stem.startswith(("test_", "__")))
]  # fmt: skip


def _write_keras_cache(home: pathlib.Path) -> None:
    """Tiny mnist.npz and imdb.npz in the layout Keras publishes them."""
    datasets = home / "datasets"
    datasets.mkdir(parents=True)
    rng = np.random.default_rng(0)
    labels = np.arange(48) % 10
    images = (rng.uniform(size=(48, 28, 28)) * 60).astype(np.uint8)
    images[np.arange(48), 2 * labels + 3, 4:24] = 255  # a bar whose row tells the digit
    np.savez(datasets / "mnist.npz", x_train=images[:32], y_train=labels[:32].astype(np.uint8),
             x_test=images[32:], y_test=labels[32:].astype(np.uint8))  # fmt: skip

    def reviews(n):
        seqs = np.empty(n, dtype=object)
        for i in range(n):
            seqs[i] = [int(w) for w in rng.integers(1, 60, size=rng.integers(3, 15))]
        return seqs

    np.savez(datasets / "imdb.npz", x_train=reviews(32), y_train=np.arange(32) % 2,
             x_test=reviews(16), y_test=np.arange(16) % 2)  # fmt: skip


@pytest.fixture(autouse=True)
def fresh_graph():
    """A script runs as a user's does: in a new global default graph, none entered (the suite's
    own fixture enters one, where a Keras weight's `value` is a read op, as in graph code)."""
    sl.reset_default_graph()
    yield


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_runs(script, tmp_path, monkeypatch):
    home = tmp_path / "keras_home"
    _write_keras_cache(home)
    monkeypatch.setenv("KERAS_HOME", str(home))
    # a script's resuming process (run with sys.executable) imports this checkout's sluice
    root = str(pathlib.Path(sl.__file__).resolve().parent.parent)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [root, os.getenv("PYTHONPATH")])))
    monkeypatch.chdir(tmp_path)
    sl.utils.set_random_seed(0)
    runpy.run_path(os.path.join(os.path.dirname(__file__), script + ".py"), run_name="__main__")
