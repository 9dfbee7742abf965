"""Keras-style scripts written the way Keras's own examples are (`import sluice as keras`),
each run whole at a tiny size: seq2seq with saved and reloaded encoder/decoder models, a
Conv1D time-series classifier with ModelCheckpoint(".keras") and load_model, a stateful LSTM,
a custom cell in RNN, a functional model with residual arithmetic, and models fed from
`keras.datasets` (tiny files in Keras's format, written into a Keras cache here); and Keras 3's
compositional examples: a GAN and a VAE with their own train_step, knowledge distillation,
siamese towers, a transformer encoder, transfer learning, the RNN guide's stateful calls on
arrays and the JAX guide's training loop, each saved, loaded in a new process and trained on.

The default run starts that new process for one script only (NEW_PROCESS_IN_DEFAULT_RUN); the
others resume in the test's own process there, from the saved file alone, as the new process
would (the same load_model, checks and training on, without a second interpreter's start-up and
compiles), and in a new process under `-m slow` (test_script_resumes_in_a_new_process)."""

from __future__ import annotations

import os
import pathlib
import runpy
import subprocess
import sys

import numpy as np
import pytest

import sluice as sl
from sluice._keras.utils import rng_utils

# VGG16's compiles (frozen, then fine-tuned, then again in the resuming process): about 35 s
SLOW = {"transfer_learning"}
# Scripts whose resuming process the default run starts, as the script does; the other scripts
# resume in the test's process there (see the module's docstring).
NEW_PROCESS_IN_DEFAULT_RUN = {"vae"}
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


def _resumes(name: str) -> bool:
    """Whether the script saves its model and goes on from the file in a new process."""
    text = (pathlib.Path(__file__).parent / f"{name}.py").read_text()
    return 'subprocess.run([sys.executable, __file__, "--resume"' in text


RESUMING = [name for name in SCRIPTS if isinstance(name, str) and _resumes(name)]  # SLOW: marked


def _resume_in_this_process(monkeypatch):
    """Runs a script's `subprocess.run([sys.executable, __file__, "--resume", path])` here: the
    script again as `__main__` with those arguments, in a new default graph and Keras session,
    so the resumed part sees only the saved file, as a new process would."""
    run = subprocess.run

    def resume(args, **kwargs):
        if not (args[0] == sys.executable and "--resume" in args):
            return run(args, **kwargs)
        sl.utils.clear_session()
        sl.reset_default_graph()
        with monkeypatch.context() as m:
            m.setattr(rng_utils, "_seed", None)  # no set_random_seed of the first part
            m.setattr(sys, "argv", list(args[1:]))
            try:
                runpy.run_path(args[1], run_name="__main__")
            except SystemExit as stop:
                if stop.code not in (None, 0):
                    raise
        return subprocess.CompletedProcess(args, 0)

    monkeypatch.setattr(subprocess, "run", resume)


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_runs(script, tmp_path, monkeypatch):
    if script not in NEW_PROCESS_IN_DEFAULT_RUN | SLOW:
        _resume_in_this_process(monkeypatch)
    _run_script(script, tmp_path, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(set(RESUMING) - NEW_PROCESS_IN_DEFAULT_RUN))
def test_script_resumes_in_a_new_process(script, tmp_path, monkeypatch):
    _run_script(script, tmp_path, monkeypatch)


def _run_script(script, tmp_path, monkeypatch):
    home = tmp_path / "keras_home"
    _write_keras_cache(home)
    monkeypatch.setenv("KERAS_HOME", str(home))
    # a script's resuming process (run with sys.executable) imports this checkout's sluice
    root = str(pathlib.Path(sl.__file__).resolve().parent.parent)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [root, os.getenv("PYTHONPATH")])))
    monkeypatch.chdir(tmp_path)
    sl.utils.set_random_seed(0)
    runpy.run_path(os.path.join(os.path.dirname(__file__), script + ".py"), run_name="__main__")
